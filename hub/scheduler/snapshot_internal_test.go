// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/hubtest"
)

// TestSnapshotFromChangesIsTheFullOne: a leader's cycles give the snapshot
// builder only the reservations that changed since the last take (and the
// running gangs not started or not counted yet). Over random jobs
// submitted, placed, started, committed and released, clusters reporting
// anew (or going away and coming back) and time passing, each cycle's
// snapshot holds the running gangs, and counts every node's GPUs, as a
// snapshot built afresh from every reservation does.
func TestSnapshotFromChangesIsTheFullOne(t *testing.T) {
	e := hubtest.New(t)
	rng := rand.New(rand.NewPCG(3, 5))
	nodes := map[string][]inventory.Node{}
	for c := range 3 {
		name := fmt.Sprintf("c%d", c)
		for n := range 4 {
			nodes[name] = append(nodes[name], hubtest.Node(fmt.Sprintf("n%d", n), fmt.Sprintf("r%d", n/2), 0))
		}
		e.Cluster(name, nodes[name]...)
	}
	invs := store.NewCollection(e.Store, registry.KindInventories, store.JSONCodec[*registry.InventoryRecord]())
	report := func(c string, at time.Time) {
		for i := range nodes[c] {
			nodes[c][i].UsedGPUs = rng.IntN(3)
		}
		b, err := json.Marshal(inventory.Cluster{Name: c, Nodes: nodes[c]})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := invs.GuaranteedUpdate(e.Ctx, c, func(r *registry.InventoryRecord) (*registry.InventoryRecord, error) {
			r.Generation++
			r.Received, r.Inventory = at, b
			return r, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	s := New(e.Store, Config{Clock: e.Clock})
	c := s.newCaches()
	stop, err := c.start(e.Ctx, func() {})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	s.caches = c
	changed, checked := 0, 0
	s.builtHook = func(f *fleet, got *placement.Snapshot, fromChanges bool) {
		var values []placement.Allocation
		for _, a := range f.allocations(nil) {
			values = append(values, *a)
		}
		want := placement.NewSnapshot(f.clusters, values)
		if g, w := got.Running(), want.Running(); !reflect.DeepEqual(g, w) {
			t.Fatalf("cycle %d (from changes %v): running gangs\n%+v\nwant\n%+v", checked, fromChanges, g, w)
		}
		for _, cl := range f.clusters {
			for _, n := range cl.Nodes {
				gg, gu, _ := got.NodeUsage(cl.Name, n.Name)
				wg, wu, _ := want.NodeUsage(cl.Name, n.Name)
				if gg != wg || gu != wu {
					t.Fatalf("cycle %d (from changes %v): node %s/%s: %d GPUs, %d used; want %d, %d",
						checked, fromChanges, cl.Name, n.Name, gg, gu, wg, wu)
				}
			}
		}
		checked++
		if fromChanges {
			changed++
		}
	}
	l := ledger.New(e.Store)
	status := jobs.NewStatus(e.Store)
	var placed []string
	for step := range 250 {
		switch rng.IntN(6) {
		case 0, 1:
			e.Submit(fmt.Sprintf("j%03d", step), 1+rng.Int32N(2), 1+rng.Int32N(8))
		case 2: // a placed job's members all run
			if len(placed) > 0 {
				name := placed[rng.IntN(len(placed))]
				if r, _, err := l.Get(e.Ctx, name); err == nil {
					if err := l.MarkStarted(e.Ctx, name, r.Epoch, e.Clock.Now()); err != nil {
						t.Fatal(err)
					}
				}
			}
		case 3: // a placed job's dispatch commits
			if len(placed) > 0 {
				name := placed[rng.IntN(len(placed))]
				j, rev, err := e.Jobs.Get(e.Ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				at := metav1.NewTime(e.Clock.Now())
				if _, err := status.Apply(e.Ctx, store.Item[*v1alpha1.Job]{Name: name, Object: j, Revision: rev},
					jobs.Decide(jobs.Decision{Dispatch: v1alpha1.DispatchStatus{Epoch: 1, Phase: v1alpha1.DispatchCommitted, Time: &at}})); err != nil {
					t.Fatal(err)
				}
			}
		case 4: // a placed job ends: its reservation goes
			if len(placed) > 0 {
				i := rng.IntN(len(placed))
				if r, _, err := l.Get(e.Ctx, placed[i]); err == nil {
					if err := l.Release(e.Ctx, placed[i], r.Epoch); err != nil {
						t.Fatal(err)
					}
				}
				placed = slices.Delete(placed, i, i+1)
			}
		case 5: // a cluster reports: now, or (rarely) a report older than its last
			at := e.Clock.Now()
			if rng.IntN(3) == 0 {
				at = at.Add(-time.Hour)
			}
			report(fmt.Sprintf("c%d", rng.IntN(3)), at)
		}
		e.Clock.Step(time.Duration(rng.IntN(3)) * time.Second)
		res, err := s.Cycle(e.Ctx, nil)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		placed = append(placed, res.Placed...)
	}
	if changed < checked/2 {
		t.Fatalf("%d of %d cycles built from what changed, want at least half", changed, checked)
	}
}
