// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

func TestQueueTableShowsEffectivePodSecurity(t *testing.T) {
	qs := []*v1alpha1.Queue{
		testqueue.New("a").PodSecurity(v1alpha1.PodSecurityBaseline).Obj(),
		testqueue.New("a/b").PodSecurity(v1alpha1.PodSecurityPrivileged).Obj(), // clamped by a
		testqueue.New("a/c").PodSecurity(v1alpha1.PodSecurityRestricted).Obj(),
		testqueue.New("z").Obj(),
	}
	var buf bytes.Buffer
	if err := printQueueTable(&buf, qs, byName(qs), false, time.Now()); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "baseline", "a/b": "baseline (from a)", "a/c": "restricted", "z": "baseline (default)"}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if !strings.Contains(lines[0], "POD-SECURITY") {
		t.Fatalf("header %q", lines[0])
	}
	for _, l := range lines[1:] {
		name := strings.Fields(l)[0]
		if !strings.Contains(l, want[name]) {
			t.Errorf("queue %s: %q, want %q", name, l, want[name])
		}
	}
}
