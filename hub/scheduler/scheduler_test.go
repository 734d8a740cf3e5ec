// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/store"
)

func rack(j *v1alpha1.Job) { j.Spec.Placement.Topology.Required = v1alpha1.TopologyRack }

func TestPlacesGangWithinOneRack(t *testing.T) {
	e := newEnv(t)
	e.Cluster("eu1", node("a1", "ra", 0), node("b1", "rb", 0), node("b2", "rb", 0), node("a2", "ra", 8))
	e.Submit("llama", 2, 8, rack)
	s := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock})
	res, err := s.Cycle(e.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Placed) != 1 {
		t.Fatalf("placed %v, want [llama]", res.Placed)
	}
	j := e.Job("llama")
	if j.Status.Phase != v1alpha1.JobPlaced || j.Status.Epoch != 1 {
		t.Fatalf("phase %s epoch %d, want Placed 1", j.Status.Phase, j.Status.Epoch)
	}
	if len(j.Status.Members) != 2 {
		t.Fatalf("members %+v", j.Status.Members)
	}
	for _, m := range j.Status.Members {
		if m.Cluster != "eu1" || (m.Node != "b1" && m.Node != "b2") {
			t.Errorf("member %+v outside the free rack rb", m)
		}
	}
	r, _, err := ledger.New(e.Store).Get(e.Ctx, "llama")
	if err != nil {
		t.Fatal(err)
	}
	if r.Epoch != 1 || len(r.Members) != 2 || r.Members[0].VirtualNode != "shoal-eu1-h100-80gb" {
		t.Fatalf("reservation %+v", r)
	}
	// A second cycle places nothing more: the GPUs are booked.
	e.Submit("second", 2, 8, rack)
	if res, err = s.Cycle(e.Ctx, nil); err != nil || len(res.Placed) != 0 {
		t.Fatalf("second cycle placed %v (err %v), want nothing", res.Placed, err)
	}
}

func TestWaitingJobCarriesExplanation(t *testing.T) {
	for name, tc := range map[string]struct {
		nodes   []int // used GPUs per node
		members int32
		reason  string
	}{
		"insufficient": {nodes: []int{0, 0}, members: 3, reason: "InsufficientGPUs"},
		"fragmented 4+4 never gets an 8-GPU member": {nodes: []int{4, 4}, members: 1, reason: "Fragmented"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			var ns []inventory.Node
			for i, used := range tc.nodes {
				ns = append(ns, node(string(rune('a'+i)), "r", used))
			}
			e.Cluster("eu1", ns...)
			e.Submit("big", tc.members, 8)
			if _, err := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock}).Cycle(e.Ctx, nil); err != nil {
				t.Fatal(err)
			}
			j := e.Job("big")
			c := meta.FindStatusCondition(j.Status.Conditions, v1alpha1.JobConditionPlaced)
			if j.Status.Phase != v1alpha1.JobPending || c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason || c.Message == "" {
				t.Fatalf("phase %s condition %+v, want Pending with Placed=False reason %s", j.Status.Phase, c, tc.reason)
			}
			if j.Status.Placement == nil || j.Status.Placement.Explanation != c.Message {
				t.Fatalf("placement status %+v does not carry the explanation", j.Status.Placement)
			}
		})
	}
}

func TestSplitsOverTwoClustersWithMaxClusters(t *testing.T) {
	e := newEnv(t)
	e.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	e.Cluster("us1", node("c", "r", 0), node("d", "r", 0))
	e.Submit("one", 3, 8)
	e.Submit("two", 3, 8, func(j *v1alpha1.Job) { j.Spec.Placement.MaxClusters = 2 })
	res, err := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock}).Cycle(e.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Placed) != 1 || res.Placed[0] != "two" {
		t.Fatalf("placed %v, want [two]", res.Placed)
	}
	if cs := e.Job("two").Status.Placement.Clusters; len(cs) != 2 {
		t.Fatalf("clusters %v, want two", cs)
	}
	if c := meta.FindStatusCondition(e.Job("one").Status.Conditions, v1alpha1.JobConditionPlaced); c == nil || c.Reason == "" {
		t.Fatalf("job one has no explanation: %+v", c)
	}
}

// TestTwoSchedulersNeverBookTheSameGPU races two schedulers on one etcd
// with no election while jobs of rising priority arrive, so the two often
// decide on different snapshots: the ledger's guards alone must keep every
// node within its GPUs.
func TestTwoSchedulersNeverBookTheSameGPU(t *testing.T) {
	e := newEnv(t)
	e.Cluster("eu1", node("a", "r1", 0), node("b", "r1", 0), node("c", "r2", 0))
	e.Cluster("us1", node("d", "r1", 0), node("e", "r1", 0))
	classes := []v1alpha1.PriorityClass{v1alpha1.PriorityDevelopment, v1alpha1.PrioritySpot,
		v1alpha1.PriorityBatch, v1alpha1.PriorityTraining, v1alpha1.PriorityProduction}
	var wg sync.WaitGroup
	var stop atomic.Bool
	conflicts := make([]int, 2)
	for w := range 2 {
		s := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock},
			scheduler.WithPlacementOptions(placement.WithPreemption(false, 0)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				res, err := s.Cycle(e.Ctx, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Conflict {
					conflicts[w]++
				}
			}
		}()
	}
	for i := range 40 {
		e.Submit(fmt.Sprintf("j%02d", i), 1, int32(2+2*(i%3)), func(j *v1alpha1.Job) {
			j.Spec.PriorityClass = classes[i%len(classes)]
		})
	}
	stop.Store(true)
	wg.Wait()
	l, err := ledger.New(e.Store).Read(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	booked := map[string]int{}
	total := 0
	for _, it := range l.Reservations {
		for _, a := range it.Object.Assignments {
			booked[a.Cluster+"/"+a.Node] += a.Members * it.Object.Gang.GPUsPerMember
			total += a.Members * it.Object.Gang.GPUsPerMember
		}
	}
	for n, g := range booked {
		if g > 8 {
			t.Errorf("node %s booked with %d GPUs, has 8", n, g)
		}
	}
	t.Logf("booked %d of 40 GPUs in %d reservations; conflicts %v", total, len(l.Reservations), conflicts)
}

func TestPreemptsSpotForProduction(t *testing.T) {
	e := newEnv(t)
	e.Cluster("eu1", node("a", "r", 0))
	e.Submit("spot", 1, 8, func(j *v1alpha1.Job) { j.Spec.PriorityClass = v1alpha1.PrioritySpot })
	s := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock},
		scheduler.WithPlacementOptions(placement.WithPreemptAfter(0)))
	if res, err := s.Cycle(e.Ctx, nil); err != nil || len(res.Placed) != 1 {
		t.Fatalf("placed %v, %v", res.Placed, err)
	}
	e.Submit("prod", 1, 8, func(j *v1alpha1.Job) { j.Spec.PriorityClass = v1alpha1.PriorityProduction })
	res, err := s.Cycle(e.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Preempted) != 1 || res.Preempted[0] != "spot" {
		t.Fatalf("preempted %v, want [spot]", res.Preempted)
	}
	spot := e.Job("spot")
	if c := meta.FindStatusCondition(spot.Status.Conditions, v1alpha1.JobConditionPreempted); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("spot conditions %+v", spot.Status.Conditions)
	}
	if spot.Annotations[v1alpha1.AnnotationPreemptedBy] != "prod" {
		t.Fatalf("annotations %v", spot.Annotations)
	}
}

// TestRunElectsOneLeader runs two replicas' loops; jobs get placed and a
// new leader takes over when the first stops.
func TestRunElectsOneLeader(t *testing.T) {
	e := newEnv(t)
	e.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	ctxA, stopA := context.WithCancel(e.Ctx)
	doneA := make(chan error, 1)
	go func() {
		doneA <- scheduler.New(e.Store, scheduler.Config{Identity: "a", Interval: 50 * time.Millisecond}).Run(ctxA)
	}()
	waitLeader(t, e, "a")
	go func() {
		_ = scheduler.New(e.Store, scheduler.Config{Identity: "b", Interval: 50 * time.Millisecond}).Run(e.Ctx)
	}()
	e.Submit("first", 1, 8)
	waitPhase(t, e, "first", v1alpha1.JobPlaced)
	stopA()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	waitLeader(t, e, "b")
	e.Submit("second", 1, 8)
	waitPhase(t, e, "second", v1alpha1.JobPlaced)
}

func waitLeader(t *testing.T, e *env, id string) {
	t.Helper()
	poll(t, func() bool {
		l, err := e.Store.Leader(e.Ctx, scheduler.Election)
		return err == nil && l == id
	}, "leader "+id)
}

func waitPhase(t *testing.T, e *env, job string, p v1alpha1.JobPhase) {
	t.Helper()
	poll(t, func() bool { return e.Job(job).Status.Phase == p }, job+" "+string(p))
}

func poll(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var _ = store.ErrConflict
