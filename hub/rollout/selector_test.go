// SPDX-License-Identifier: Apache-2.0

package rollout_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/rollout"
)

// TestCreateSelectorExpressions: a rollout's selector takes the set-based
// syntax (in, notin, exists, !exists) and its waves hold exactly the
// clusters it selects.
func TestCreateSelectorExpressions(t *testing.T) {
	labels := map[string]map[string]string{
		"a": {"env": "prod", "zone": "x"},
		"b": {"env": "staging"},
		"c": {},
	}
	tests := []struct {
		selector string
		want     []string
	}{
		{"env in (prod,staging)", []string{"a", "b"}},
		{"env notin (prod)", []string{"b", "c"}},
		{"zone", []string{"a"}},
		{"!zone", []string{"b", "c"}},
		{"env notin (staging),!zone", []string{"c"}},
	}
	for i, tt := range tests {
		t.Run(tt.selector, func(t *testing.T) {
			e := newEnv(t)
			fleetOf(t, e, "a", "b", "c")
			for name, ls := range labels {
				if _, _, err := e.clusters.GuaranteedUpdate(e.ctx, name, func(c *v1alpha1.Cluster) (*v1alpha1.Cluster, error) {
					c.Labels = ls
					return c, nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			r, err := e.ctrl.Create(e.ctx, rollout.CreateRequest{Name: fmt.Sprintf("r%d", i), Revision: newCommit,
				Selector: tt.selector, Waves: "100%", Soak: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range r.Status.Waves {
				got = append(got, w.Clusters...)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("clusters %v, want %v", got, tt.want)
			}
		})
	}
}
