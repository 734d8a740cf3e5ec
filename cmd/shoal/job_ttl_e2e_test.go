// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
	"time"
)

// ttlJobYAML is a one-member job of queue research/ttl with ttl seconds
// after finished ("" leaves the field out).
func ttlJobYAML(name, ttl string) string {
	y := "apiVersion: shoal.dev/v1alpha1\nkind: Job\nmetadata: {name: " + name + "}\nspec:\n  queue: research/ttl\n" +
		"  gang: {members: 1, gpusPerMember: 8}\n  template: {spec: {containers: [{name: w, image: busybox}]}}\n"
	if ttl != "" {
		y += "  ttlSecondsAfterFinished: " + ttl + "\n"
	}
	return y
}

// TestFinishedJobTTL: the hub's leader deletes a finished job once its
// spec.ttlSecondsAfterFinished ran out, and keeps one under the default
// TTL (a week) and an unfinished one with TTL 0.
func TestFinishedJobTTL(t *testing.T) {
	config := startHub(t)
	run := func(stdin string, args ...string) string {
		t.Helper()
		out, err := shoal(t, config, stdin, args...)
		if err != nil {
			t.Fatalf("shoal %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	run("", "queue", "create", "research/ttl")
	run(ttlJobYAML("quick", "0"), "job", "submit", "-f", "-")
	run(ttlJobYAML("kept", ""), "job", "submit", "-f", "-")
	run(ttlJobYAML("pending", "0"), "job", "submit", "-f", "-")
	if _, err := shoal(t, config, ttlJobYAML("bad", "-1"), "job", "submit", "-f", "-"); err == nil ||
		!strings.Contains(err.Error(), "spec.ttlSecondsAfterFinished: Invalid value: -1: must not be negative") {
		t.Fatalf("negative TTL: %v", err)
	}
	run("", "job", "cancel", "quick", "kept")
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, err := shoal(t, config, "", "job", "get", "quick")
		if err != nil && strings.Contains(err.Error(), `job "quick" not found`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job quick (TTL 0, cancelled) still there after 30s: %v", err)
		}
		time.Sleep(200 * time.Millisecond) // the sweeper runs every 500ms
	}
	if out := run("", "job", "list", "--queue", "research/ttl"); !strings.Contains(out, "kept") || !strings.Contains(out, "pending") {
		t.Fatalf("kept (default TTL) or pending (unfinished) deleted:\n%s", out)
	}
}
