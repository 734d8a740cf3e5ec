// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
)

// TestDrainCommandsReachTheHub drives the drain commands against a real
// hub: the RPCs are served (the registry's refusals come back) and a
// malformed CLUSTER/NODE is refused before any call.
func TestDrainCommandsReachTheHub(t *testing.T) {
	config := startHub(t)
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"cluster", "drain", "nope"}, `not found: cluster "nope"`},
		{[]string{"node", "drain", "nope/n1"}, `not found: cluster "nope"`},
		{[]string{"node", "uncordon", "nope/n1"}, `not found: cluster "nope"`},
		{[]string{"node", "drain", "nope/Bad_Node"}, `invalid argument: node "Bad_Node": a lowercase RFC 1123 subdomain`},
		{[]string{"node", "drain", "nope"}, `"nope": want CLUSTER/NODE`},
	} {
		_, err := shoal(t, config, "", tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("shoal %s: error %v, want %q", strings.Join(tc.args, " "), err, tc.wantErr)
		}
	}
}
