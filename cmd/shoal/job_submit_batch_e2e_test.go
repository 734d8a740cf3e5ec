// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"strings"
	"testing"
)

// batchDoc is a job document of queue pipeline with members members.
func batchDoc(name string, members int) string {
	return fmt.Sprintf(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata: {name: %s}
spec:
  queue: pipeline
  gang: {members: %d, gpusPerMember: 1}
  template: {spec: {containers: [{name: main, image: busybox}]}}
`, name, members)
}

// TestSubmitManyDocuments submits a file of several jobs, one of them
// invalid, against a real hub: they go in one batch of a SubmitStream, the
// valid ones are stored, each document's result is printed and the
// command fails after all of them, naming the refused job and its field
// path.
func TestSubmitManyDocuments(t *testing.T) {
	config := startHub(t)
	if out, err := shoal(t, config, "", "queue", "create", "pipeline"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	docs := strings.Join([]string{batchDoc("step-1", 1), batchDoc("step-bad", 0), batchDoc("step-2", 2)}, "---\n")
	out, err := shoal(t, config, docs, "job", "submit", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), "1 of 3 jobs refused") {
		t.Fatalf("error %v, want 1 of 3 refused\n%s", err, out)
	}
	for _, want := range []string{"job/step-1 submitted (Pending in queue pipeline)", "job/step-2 submitted",
		"job/step-bad refused:", "spec.gang.members"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = shoal(t, config, "", "job", "list", "--queue", "pipeline")
	if err != nil || !strings.Contains(out, "step-1") || !strings.Contains(out, "step-2") || strings.Contains(out, "step-bad") {
		t.Errorf("list: %v\n%s", err, out)
	}
	// Again, fixed: the stored ones are unchanged, the fixed one is created.
	docs = strings.Join([]string{batchDoc("step-1", 1), batchDoc("step-bad", 1), batchDoc("step-2", 2)}, "---\n")
	out, err = shoal(t, config, docs, "job", "submit", "-f", "-")
	if err != nil || strings.Count(out, "unchanged") != 2 || !strings.Contains(out, "job/step-bad submitted") {
		t.Errorf("resubmit: %v\n%s", err, out)
	}
}
