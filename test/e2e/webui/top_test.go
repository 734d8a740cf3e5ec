// SPDX-License-Identifier: Apache-2.0

package webui_test

import (
	"fmt"
	"strings"
	"testing"
)

// checkTop runs `shoal top --once` on the fleet and checks each cluster's
// row against the API: state, GPUs, free, unhealthy.
func checkTop(t *testing.T, api *restAPI) {
	out := shoal(t, "", "top", "--once")
	t.Logf("shoal top --once:\n%s", out)
	rows := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	for _, c := range api.clusters(t) {
		inv := c.Status.Inventory
		want := fmt.Sprintf("%s %s %d %d %d %d", c.Name, c.Status.State, inv.GPUs, inv.FreeGPUs, inv.GPUs-inv.FreeGPUs-inv.UnhealthyGPUs, inv.UnhealthyGPUs)
		if got := strings.Join(rows[c.Name], " "); !strings.HasPrefix(got, want) {
			t.Errorf("shoal top row %q, want it to start %q (the API)", got, want)
		}
	}
	if !strings.Contains(out, fmt.Sprintf("Fleet: %d clusters (%d Ready)", len(demoProfiles), len(demoProfiles))) {
		t.Errorf("shoal top does not show %d Ready clusters:\n%s", len(demoProfiles), out)
	}
}
