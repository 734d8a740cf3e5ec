// SPDX-License-Identifier: Apache-2.0

package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// addField is a step for the tests: it sets "added" to "yes".
func addField(raw []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	m["added"] = "yes"
	return json.Marshal(m)
}

func TestStampPutsTheVersionFirst(t *testing.T) {
	s := Schema{Steps: []Step{addField, addField}}
	for _, tc := range []struct{ in, want string }{
		{`{"a":1}`, `{"storageVersion":3,"a":1}`},
		{`{}`, `{"storageVersion":3}`},
		{`{"storageVersion":1,"a":1}`, `{"storageVersion":3,"a":1}`}, // restamped, not doubled
		{`{"storageVersion":7}`, `{"storageVersion":3}`},
	} {
		got, err := s.Stamp([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("Stamp(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
		if v, err := StoredVersion(got); err != nil || v != 3 {
			t.Errorf("StoredVersion(%s) = %d, %v; want 3", got, v, err)
		}
	}
	for _, bad := range []string{`5`, `"x"`, `[1]`, ``, `{"storageVersion":x}`} {
		if _, err := s.Stamp([]byte(bad)); err == nil {
			t.Errorf("Stamp(%q) succeeded, want an error", bad)
		}
	}
	if _, err := s.Stamp([]byte(`[]`)); !errors.Is(err, ErrNotObject) {
		t.Errorf("Stamp([]) = %v, want ErrNotObject", err)
	}
}

func TestUpgradeRunsTheStepsFromTheStoredVersion(t *testing.T) {
	calls := 0
	count := func(raw []byte) ([]byte, error) { calls++; return addField(raw) }
	s := Schema{Steps: []Step{count, count}}
	for _, tc := range []struct {
		in        string
		from      int
		wantCalls int
	}{
		{`{"a":1}`, Legacy, 2}, // no version: legacy, both steps
		{`{"storageVersion":2,"a":1}`, 2, 1},
		{`{"storageVersion":3,"a":1}`, 3, 0},
		{`{"storageVersion":9,"a":1}`, 9, 0}, // a newer release's: as is
	} {
		calls = 0
		got, err := s.Upgrade([]byte(tc.in))
		from, verr := StoredVersion([]byte(tc.in))
		if err != nil || verr != nil || from != tc.from || calls != tc.wantCalls {
			t.Errorf("Upgrade(%s): from %d, %d steps, %v %v; want from %d, %d steps", tc.in, from, calls, err, verr, tc.from, tc.wantCalls)
		}
		if tc.wantCalls == 0 && string(got) != tc.in {
			t.Errorf("Upgrade(%s) changed a current record: %s", tc.in, got)
		}
		if tc.wantCalls > 0 && !bytes.Contains(got, []byte(`"added":"yes"`)) {
			t.Errorf("Upgrade(%s) = %s, want the step's field", tc.in, got)
		}
	}
	if _, err := s.Upgrade([]byte(`{"storageVersion":0}`)); err == nil {
		t.Error("Upgrade of version 0 succeeded, want an error")
	}
	failing := Schema{Steps: []Step{func([]byte) ([]byte, error) { return nil, errors.New("boom") }}}
	if _, err := failing.Upgrade([]byte(`{}`)); err == nil {
		t.Error("Upgrade with a failing step succeeded")
	}
}

func TestGzippedRecords(t *testing.T) {
	s := Schema{Steps: []Step{addField}}
	plain := []byte(`{"storageVersion":2,"a":1}`)
	z, err := Gzip(plain)
	if err != nil {
		t.Fatal(err)
	}
	// Stamped before compressing: returned as is.
	if got, err := s.Stamp(z); err != nil || !bytes.Equal(got, z) {
		t.Errorf("Stamp of a stamped gzipped record changed it (%v)", err)
	}
	// Not stamped: stamped inside the compression.
	legacy, _ := Gzip([]byte(`{"a":1}`))
	got, err := s.Stamp(legacy)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := StoredVersion(got); err != nil || v != 2 {
		t.Errorf("StoredVersion of the restamped gzipped record = %d, %v; want 2", v, err)
	}
	if inner, _ := Gunzip(got); string(inner) != `{"storageVersion":2,"a":1}` {
		t.Errorf("restamped gzipped record holds %s", inner)
	}
	// A legacy gzipped record is migrated into plain JSON.
	if v, err := StoredVersion(legacy); err != nil || v != Legacy {
		t.Errorf("StoredVersion(gzipped legacy) = %d, %v", v, err)
	}
	up, err := s.Upgrade(legacy)
	if err != nil || string(up) != `{"a":1,"added":"yes"}` {
		t.Errorf("Upgrade(gzipped legacy) = %s, %v", up, err)
	}
	// A current one stays compressed.
	if up, err := s.Upgrade(z); err != nil || !bytes.Equal(up, z) {
		t.Errorf("Upgrade(gzipped current): %v, changed %v", err, !bytes.Equal(up, z))
	}
}

func TestEveryKindIsVersioned(t *testing.T) {
	for _, k := range Kinds() {
		if v := For(k).Version(); v < Legacy {
			t.Errorf("kind %s has version %d", k, v)
		}
	}
	if For("jobs").Version() != 2 {
		t.Errorf("jobs are at version %d, want 2 (member namespaces)", For("jobs").Version())
	}
	if For("widgets").Version() != Legacy {
		t.Error("a kind without a schema is not at the legacy version")
	}
}
