// SPDX-License-Identifier: Apache-2.0

package audit_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/audit"
)

func TestWritesOneJSONLinePerEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	if err := l.Write(audit.Entry{Time: at, User: "alice", Method: "Jobs/Submit", Object: "j", Queue: "a/b", Code: "OK"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(audit.Entry{User: "bob", Method: "Jobs/Cancel", Code: "PermissionDenied", Error: "no"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), data)
	}
	var e audit.Entry
	if err := json.Unmarshal([]byte(lines[0]), &e); err != nil {
		t.Fatal(err)
	}
	if !e.Time.Equal(at) || e.Time.Location() != time.UTC || e.User != "alice" || e.Queue != "a/b" || e.Code != "OK" {
		t.Errorf("entry = %+v", e)
	}
	if !strings.Contains(lines[1], `"error":"no"`) || strings.Contains(lines[0], `"error"`) {
		t.Errorf("error field: %q / %q", lines[0], lines[1])
	}
}

func TestEmptyPathIsNoLog(t *testing.T) {
	l, err := audit.Open("")
	if err != nil || l != nil {
		t.Fatalf("Open(\"\") = %v, %v; want nil, nil", l, err)
	}
	if err := l.Write(audit.Entry{}); err != nil {
		t.Fatal(err)
	}
}
