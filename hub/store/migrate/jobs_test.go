// SPDX-License-Identifier: Apache-2.0

package migrate_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store/migrate"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// legacyJob is a running job as the previous release stored it: no
// version, no member namespaces.
func legacyJob(t *testing.T) []byte {
	t.Helper()
	j := testjob.New("train").Queue("research").Members(3).GPUs(8).Obj()
	j.Status.Phase = v1alpha1.JobRunning
	j.Status.Epoch = 2
	j.Status.Members = []v1alpha1.MemberStatus{
		{Index: 0, Cluster: "eu1", Node: "n0", Phase: v1alpha1.MemberRunning},
		{Index: 1, Cluster: "us1", Node: "n1", Phase: v1alpha1.MemberRunning},
		{Index: 2, Phase: v1alpha1.MemberPending}, // no cluster: no pod
	}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"namespace"`)) || bytes.Contains(b, []byte(migrate.Field)) {
		t.Fatalf("the legacy fixture holds a field of version 2: %s", b)
	}
	return b
}

func decodeJob(t *testing.T, b []byte) *v1alpha1.Job {
	t.Helper()
	var j v1alpha1.Job
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	return &j
}

func TestJobV2FillsMemberNamespaces(t *testing.T) {
	jobs := migrate.For("jobs")
	raw := legacyJob(t)
	up, err := jobs.Upgrade(raw)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeJob(t, up)
	want := []string{"shoal-c-eu1", "shoal-c-us1", ""}
	for i, m := range got.Status.Members {
		if m.Namespace != want[i] {
			t.Errorf("member %d (cluster %q): namespace %q, want %q", i, m.Cluster, m.Namespace, want[i])
		}
	}
	// Nothing else changed.
	before := decodeJob(t, raw)
	for i := range got.Status.Members {
		got.Status.Members[i].Namespace = ""
	}
	if !reflect.DeepEqual(before, got) {
		t.Errorf("the step changed more than the namespaces:\n%+v\n%+v", before, got)
	}
}

func TestJobV2IsIdempotentAndKeepsUnknownFields(t *testing.T) {
	jobs := migrate.For("jobs")
	// A record the previous release rewrote after a new replica had filled
	// a namespace it does not know: legacy, with a namespace and a field
	// of a future version.
	raw := []byte(`{"metadata":{"name":"x"},"future":{"k":1},"status":{"members":[` +
		`{"index":0,"cluster":"eu1","namespace":"elsewhere","extra":true},{"index":1,"cluster":"us1"}]}}`)
	up, err := jobs.Upgrade(raw)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Future json.RawMessage `json:"future"`
		Status struct {
			Members []map[string]any `json:"members"`
		} `json:"status"`
	}
	if err := json.Unmarshal(up, &m); err != nil {
		t.Fatal(err)
	}
	if string(m.Future) != `{"k":1}` || m.Status.Members[0]["extra"] != true {
		t.Errorf("unknown fields lost: %s", up)
	}
	if m.Status.Members[0]["namespace"] != "elsewhere" || m.Status.Members[1]["namespace"] != "shoal-c-us1" {
		t.Errorf("namespaces %v, %v: want the recorded one kept and the missing one filled",
			m.Status.Members[0]["namespace"], m.Status.Members[1]["namespace"])
	}
	again, err := jobs.Upgrade(up) // still unversioned: the step runs again
	if err != nil || !bytes.Equal(again, up) {
		t.Errorf("the step is not idempotent:\n%s\n%s (%v)", up, again, err)
	}
	// A pending job (no members) is returned untouched.
	pending := []byte(`{"metadata":{"name":"p"},"spec":{"queue":"q"},"status":{"phase":"Pending"}}`)
	if up, err := jobs.Upgrade(pending); err != nil || !bytes.Equal(up, pending) {
		t.Errorf("pending job changed: %s (%v)", up, err)
	}
}

// TestPreviousReleaseRecords migrates the job records that shoal-hub at
// commit 90b32b3 wrote in the upgrade test's fleet (testdata, written by
// hack/upgrade-testdata.sh): each loads, and each member with a cluster gets
// its cluster's namespace.
func TestPreviousReleaseRecords(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "90b32b3", "jobs", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded jobs in testdata (%v)", err)
	}
	members := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := migrate.StoredVersion(raw); err != nil || v != migrate.Legacy {
			t.Fatalf("%s: stored version %d, %v; want legacy", f, v, err)
		}
		up, err := migrate.For("jobs").Upgrade(raw)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, m := range decodeJob(t, up).Status.Members {
			members++
			if m.Cluster != "" && m.Namespace != v1alpha1.ClusterNamespace(m.Cluster) {
				t.Errorf("%s: member %d on %s has namespace %q", f, m.Index, m.Cluster, m.Namespace)
			}
		}
	}
	if members == 0 {
		t.Error("the recorded jobs have no members: the fixture proves nothing")
	}
}
