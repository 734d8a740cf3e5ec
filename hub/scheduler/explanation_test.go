// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/store"
)

// TestExplanationsWrittenOnlyWhenTheirMeaningChanges counts the store
// writes to waiting jobs while the free GPUs change: none while only the
// counts in their explanations would change, one each when the reason does.
func TestExplanationsWrittenOnlyWhenTheirMeaningChanges(t *testing.T) {
	e := newEnv(t)
	e.Cluster("eu1", node("a", "r1", 8), node("b", "r1", 8), node("c", "r1", 8), node("d", "r1", 8))
	waiting := []string{"w0", "w1", "w2", "w3", "w4"}
	for _, name := range waiting {
		e.Submit(name, 8, 8) // 64 GPUs: never fits in 32
	}
	s := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock})
	stop, err := s.StartCaches(e.Ctx, func() {})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cycle := func() {
		t.Helper()
		res, err := s.Cycle(e.Ctx, nil)
		if err != nil || len(res.Placed) != 0 || res.Waiting != len(waiting) {
			t.Fatalf("cycle: %+v, %v; want %d waiting", res, err, len(waiting))
		}
	}
	revs := func() map[string]int64 {
		out := map[string]int64{}
		for _, name := range waiting {
			_, rev, err := e.Jobs.Get(e.Ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = rev
		}
		return out
	}
	placedCond := func(name string) (reason, message string) {
		c := meta.FindStatusCondition(e.Job(name).Status.Conditions, v1alpha1.JobConditionPlaced)
		if c == nil {
			t.Fatalf("%s has no Placed condition", name)
		}
		return c.Reason, c.Message
	}
	setUsed := func(used ...int) {
		t.Helper()
		var nodes []inventory.Node
		for i, u := range used {
			nodes = append(nodes, node(string(rune('a'+i)), "r1", u))
		}
		rev := putInventory(t, e, "eu1", nodes)
		waitCache(t, s, rev)
	}

	cycle()
	first := revs()
	for _, name := range waiting[1:] { // explanations are written in groups: these five in one transaction
		if first[name] != first[waiting[0]] {
			t.Errorf("first explanations at revisions %v, want one transaction for all five", first)
			break
		}
	}
	reason, msg := placedCond("w0")
	if reason != "InsufficientGPUs" || !strings.Contains(msg, " 0 are free") {
		t.Fatalf("first explanation %s: %q", reason, msg)
	}
	writes := 0
	for i, used := range [][]int{{0, 8, 8, 8}, {0, 0, 8, 8}, {3, 0, 1, 8}, {0, 0, 0, 0}} {
		setUsed(used...)
		cycle()
		for name, rev := range revs() {
			if rev != first[name] {
				writes++
				t.Errorf("change %d (used %v): %s was written (revision %d → %d)", i, used, name, first[name], rev)
			}
		}
	}
	if writes != 0 {
		t.Fatalf("%d writes to waiting jobs while only counts changed", writes)
	}
	if _, m := placedCond("w0"); m != msg {
		t.Fatalf("explanation changed to %q", m)
	}
	// A job submitted now is explained with today's counts: the stored
	// ones differ from it in counts only.
	e.Submit("late", 8, 8)
	waiting = append(waiting, "late")
	rev, _ := e.Store.Revision(e.Ctx)
	waitCacheJobs(t, s, rev)
	cycle()
	if _, m := placedCond("late"); m == msg || !strings.Contains(m, " 32 are free") {
		t.Fatalf("late job's explanation %q, want 32 free (the stored ones say %q)", m, msg)
	}

	// Cordoning every node is a change of reason: each job is written once.
	before := revs()
	var nodes []inventory.Node
	for _, n := range []string{"a", "b", "c", "d"} {
		nn := node(n, "r1", 0)
		nn.Unschedulable = true
		nodes = append(nodes, nn)
	}
	waitCache(t, s, putInventory(t, e, "eu1", nodes))
	cycle()
	cycle()
	after := revs()
	for _, name := range waiting {
		if after[name] == before[name] {
			t.Errorf("%s not rewritten when its reason changed", name)
		}
		if r, _ := placedCond(name); r != "NoMatchingNodes" {
			t.Errorf("%s: reason %s, want NoMatchingNodes", name, r)
		}
	}
	second := revs()
	cycle()
	for name, rev := range revs() {
		if rev != second[name] {
			t.Errorf("%s rewritten by a cycle with nothing new", name)
		}
	}
}

// putInventory replaces a cluster's inventory as the registry does on a
// report and returns the store revision of the write.
func putInventory(t *testing.T, e *env, cluster string, nodes []inventory.Node) int64 {
	t.Helper()
	raw, err := json.Marshal(inventory.Cluster{Name: cluster, Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	invs := store.NewCollection(e.Store, registry.KindInventories, store.JSONCodec[*registry.InventoryRecord]())
	e.Clock.Step(time.Second)
	rev, err := invs.Update(e.Ctx, cluster, &registry.InventoryRecord{Cluster: cluster, Generation: 2,
		Received: e.Clock.Now(), Inventory: raw}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// waitCache waits until the scheduler's inventory cache has revision rev.
func waitCache(t *testing.T, s *scheduler.Scheduler, rev int64) {
	t.Helper()
	poll(t, func() bool { return s.CacheRevision() >= rev }, "the inventory cache")
}

// waitCacheJobs waits until a cycle's snapshot includes every job written
// up to rev: a cycle run then sees them.
func waitCacheJobs(t *testing.T, s *scheduler.Scheduler, rev int64) {
	t.Helper()
	poll(t, func() bool { return s.JobsCacheRevision() >= rev }, "the job cache")
}

// TestChangedExplanationsAreRateLimited: when every waiting job's
// explanation changes at once, a cycle rewrites only what
// Config.ExplanationRate allows and the next cycles the rest as the rate
// refills; jobs' first explanations are never held back.
func TestChangedExplanationsAreRateLimited(t *testing.T) {
	e := newEnv(t)
	e.Cluster("eu1", node("a", "r1", 8), node("b", "r1", 8))
	waiting := []string{"w0", "w1", "w2", "w3", "w4"}
	for _, name := range waiting {
		e.Submit(name, 4, 8) // 32 GPUs: never fits in 16
	}
	s := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock, ExplanationRate: 1.0 / 60, ExplanationBurst: 2})
	stop, err := s.StartCaches(e.Ctx, func() {})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	rev, _ := e.Store.Revision(e.Ctx)
	waitCacheJobs(t, s, rev)
	cycle := func() {
		t.Helper()
		if _, err := s.Cycle(e.Ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	reasons := func() map[string]int {
		out := map[string]int{}
		for _, name := range waiting {
			if c := meta.FindStatusCondition(e.Job(name).Status.Conditions, v1alpha1.JobConditionPlaced); c != nil {
				out[c.Reason]++
			}
		}
		return out
	}
	cycle()
	if got := reasons(); got["InsufficientGPUs"] != len(waiting) {
		t.Fatalf("first explanations %v, want all %d (never held back)", got, len(waiting))
	}
	// Cordoning both nodes changes every job's reason.
	var nodes []inventory.Node
	for _, n := range []string{"a", "b"} {
		nn := node(n, "r1", 0)
		nn.Unschedulable = true
		nodes = append(nodes, nn)
	}
	waitCache(t, s, putInventory(t, e, "eu1", nodes))
	cycle()
	if got := reasons(); got["NoMatchingNodes"] != 2 {
		t.Fatalf("after the change %v, want 2 rewritten (the burst)", got)
	}
	cycle()
	if got := reasons(); got["NoMatchingNodes"] != 2 {
		t.Fatalf("a second cycle at once: %v, want still 2", got)
	}
	e.Clock.Step(time.Minute)
	cycle()
	if got := reasons(); got["NoMatchingNodes"] != 3 {
		t.Fatalf("a minute later: %v, want 3 (one a minute)", got)
	}
	// A new job is explained at once though the rate is spent.
	e.Submit("late", 4, 8)
	waiting = append(waiting, "late")
	rev, _ = e.Store.Revision(e.Ctx)
	waitCacheJobs(t, s, rev)
	cycle()
	if c := meta.FindStatusCondition(e.Job("late").Status.Conditions, v1alpha1.JobConditionPlaced); c == nil ||
		c.Reason != "NoMatchingNodes" {
		t.Fatalf("the late job's first explanation: %+v", c)
	}
	e.Clock.Step(2 * time.Minute)
	cycle()
	if got := reasons(); got["NoMatchingNodes"] != len(waiting) {
		t.Fatalf("three minutes later: %v, want all %d", got, len(waiting))
	}
}
