// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// TestPrintJobEventsSaysWhereToResume: a watch that ends among the events
// of one revision resumes from the revision before; one that ends on the
// last of its revision, from it. Structured output marks the events that
// have more of their revision after them.
func TestPrintJobEventsSaysWhereToResume(t *testing.T) {
	ev := func(name string, rev int64, more bool) *shoalv1.WatchEvent {
		b, err := json.Marshal(testjob.New(name).Queue("q").Members(1).GPUs(1).Obj())
		if err != nil {
			t.Fatal(err)
		}
		return &shoalv1.WatchEvent{Type: shoalv1.WatchEvent_ADDED, Object: &shoalv1.Object{Json: b, Revision: rev}, More: more}
	}
	for _, tc := range []struct {
		name   string
		events []*shoalv1.WatchEvent
		resume int64
	}{
		{"none", nil, 0},
		{"whole batch", []*shoalv1.WatchEvent{ev("a", 7, true), ev("b", 7, false)}, 7},
		{"among a batch", []*shoalv1.WatchEvent{ev("x", 5, false), ev("a", 7, true)}, 6},
	} {
		var out bytes.Buffer
		resume, err := printJobEvents(&out, &fakeStream{events: tc.events}, "table")
		if err != nil || resume != tc.resume {
			t.Errorf("%s: resume %d, %v; want %d", tc.name, resume, err, tc.resume)
		}
	}
	var out bytes.Buffer
	if _, err := printJobEvents(&out, &fakeStream{events: []*shoalv1.WatchEvent{ev("a", 7, true), ev("b", 7, false)}}, "json"); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(out.String(), `"more": true`); lines != 1 {
		t.Errorf("json output marks %d events with more, want 1:\n%s", lines, out.String())
	}
}
