// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// A source the hub stores without defaults is the one the syncer runs with
// its defaults applied; a changed path is not.
func TestSameSource(t *testing.T) {
	hub := v1alpha1.GitOpsSource{URL: "http://git.example/fleet.git", Path: "clusters/eu1"}
	cur := hub.WithDefaults()
	if !sameSource(cur, hub) {
		t.Fatalf("defaulted %+v and stored %+v compare different: every report would restart a sync", cur, hub)
	}
	moved := hub
	moved.Path = "clusters/eu2"
	if sameSource(cur, moved) {
		t.Fatal("a changed path compares equal")
	}
}
