// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

func TestPoolClusters(t *testing.T) {
	queues := map[string]*v1alpha1.Queue{
		"team":         {ObjectMeta: metav1.ObjectMeta{Name: "team"}, Spec: v1alpha1.QueueSpec{Pools: []string{"train", "serve", "closed", "drained"}}},
		"team/serving": {ObjectMeta: metav1.ObjectMeta{Name: "team/serving"}},
		"other":        {ObjectMeta: metav1.ObjectMeta{Name: "other"}},
	}
	pool := func(name string, spec v1alpha1.GPUPoolSpec, clusters ...string) *v1alpha1.GPUPool {
		return &v1alpha1.GPUPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec,
			Status: v1alpha1.GPUPoolStatus{Clusters: clusters}}
	}
	pv := poolView{
		queue: func(_ context.Context, name string) (*v1alpha1.Queue, error) {
			if q, ok := queues[name]; ok {
				return q, nil
			}
			return nil, fmt.Errorf("%w: queue %q", store.ErrNotFound, name)
		},
		pools: func(context.Context) ([]*v1alpha1.GPUPool, error) {
			return []*v1alpha1.GPUPool{
				pool("train", v1alpha1.GPUPoolSpec{}, "east"),
				pool("serve", v1alpha1.GPUPoolSpec{}, "west", "east"),
				pool("closed", v1alpha1.GPUPoolSpec{Cordoned: true}, "north"),
				pool("drained", v1alpha1.GPUPoolSpec{Drain: true}, "south"),
				pool("unbound", v1alpha1.GPUPoolSpec{}, "far"),
			}, nil
		},
	}
	ctx := context.Background()

	// A child queue inherits its parent's pools; cordoned and drained pools
	// offer no cluster to pin to.
	got, bound, err := poolClusters(ctx, pv, "team/serving")
	if err != nil || !bound {
		t.Fatalf("poolClusters(team/serving) = %v, %v, %v", got, bound, err)
	}
	var names []string
	for c := range got {
		names = append(names, c)
	}
	sort.Strings(names)
	if want := []string{"east", "west"}; !reflect.DeepEqual(names, want) {
		t.Errorf("clusters of team/serving's pools = %v, want %v", names, want)
	}

	// A queue bound to no pool does not restrict spread.
	if got, bound, err := poolClusters(ctx, pv, "other"); err != nil || bound || got != nil {
		t.Errorf("poolClusters(other) = %v, %v, %v; want unbound", got, bound, err)
	}

	// A store error is returned, not taken for "no pools".
	broken := pv
	broken.queue = func(context.Context, string) (*v1alpha1.Queue, error) { return nil, fmt.Errorf("etcd down") }
	if _, _, err := poolClusters(ctx, broken, "team/serving"); err == nil {
		t.Error("poolClusters with a failing queue read: no error")
	}
}
