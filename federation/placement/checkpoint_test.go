// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"errors"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// checkpointFleet is one rack of two 8-GPU nodes, both held by a
// preemptible batch gang of 8 GPUs started at t0 (a and b); a waiting gang
// of 8 GPUs can run only by preempting one of them.
func checkpointFleet(t *testing.T) *Snapshot {
	t.Helper()
	c := fleetSpec{name: "c", racks: 1, perRack: 2, gpus: 8}.cluster()
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	startAtT0(t, s, newGang("a", 1, 8).priority(PriorityDevelopment, true).obj(),
		newGang("b", 1, 8).priority(PriorityDevelopment, true).obj())
	return s
}

// startAtT0 places the gangs, with a 5-minute grace, and starts them at t0.
func startAtT0(t *testing.T, s *Snapshot, gs ...Gang) {
	t.Helper()
	for _, g := range gs {
		g.GracePeriod = 5 * time.Minute
		p, err := s.Place(g)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Assume(g, p, t0); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPreemptionPicksTheVictimWithTheLatestCheckpoint(t *testing.T) {
	s := checkpointFleet(t)
	now := t0.Add(3 * time.Hour)
	// a saved 10 minutes ago, b two hours ago: a loses less.
	if err := s.Checkpointed("a", now.Add(-10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpointed("b", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	prod := newGang("prod", 1, 8).priority(PriorityProduction, false).obj()
	prod.Submitted = now.Add(-2 * time.Hour)
	d := Schedule(s, Input{Now: now, Pending: []Gang{prod}})
	if len(d.Preemptions) != 1 || d.Preemptions[0].Victim != "a" {
		t.Fatalf("preemptions = %+v, want a", d.Preemptions)
	}
	// Lost from a's checkpoint to the end of its grace: 15 minutes × 8 GPUs.
	if got := d.Preemptions[0].GPUHoursLost; got != 2 {
		t.Errorf("GPU-hours lost = %v, want 2", got)
	}
}

func TestPreemptionCostsNothingWhenTheNextCheckpointFallsInTheGrace(t *testing.T) {
	s := checkpointFleet(t)
	// a checkpoints hourly (at t0+1h and t0+2h); at t0+2h57m its next one,
	// at t0+3h, falls within its 5-minute grace.
	for _, at := range []time.Time{t0.Add(time.Hour), t0.Add(2 * time.Hour)} {
		if err := s.Checkpointed("a", at); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Checkpointed("b", t0.Add(2*time.Hour+50*time.Minute)); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(2*time.Hour + 57*time.Minute)
	prod := newGang("prod", 1, 8).priority(PriorityProduction, false).obj()
	prod.Submitted = now.Add(-2 * time.Hour)
	d := Schedule(s, Input{Now: now, Pending: []Gang{prod}})
	if len(d.Preemptions) != 1 || d.Preemptions[0].Victim != "a" || d.Preemptions[0].GPUHoursLost != 0 {
		t.Fatalf("preemptions = %+v, want a at no cost", d.Preemptions)
	}
}

func TestPreemptionLossBudgetOfLowerPriorities(t *testing.T) {
	now := t0.Add(3 * time.Hour)
	batch := func(waited time.Duration) Gang {
		g := newGang("batch", 1, 8).priority(PriorityBatch, true).obj()
		g.Submitted = now.Add(-waited)
		return g
	}
	// Both victims would lose 3h05m × 8 GPUs (no checkpoint). A batch gang
	// that waited 1h (30 minutes beyond preempt-after) may cost 0.1 ×
	// 0.5h × 8 = 0.4 GPU-hours: it keeps waiting.
	d := Schedule(checkpointFleet(t), Input{Now: now, Pending: []Gang{batch(time.Hour)}})
	if len(d.Preemptions) != 0 {
		t.Fatalf("a batch gang preempted at a loss of %v GPU-hours", d.Preemptions[0].GPUHoursLost)
	}
	// Nearly 4 hours beyond preempt-after: still bounded (0.1 × 3.9h × 8 < 24.7).
	d = Schedule(checkpointFleet(t), Input{Now: now, Pending: []Gang{batch(4*time.Hour + 24*time.Minute)}})
	if len(d.Preemptions) != 0 {
		t.Fatalf("a batch gang preempted at a loss of %v GPU-hours within the budget's 4 hours", d.Preemptions[0].GPUHoursLost)
	}
	// After 4 hours beyond it the budget ends: victims that never
	// checkpoint would otherwise never be preempted.
	d = Schedule(checkpointFleet(t), Input{Now: now, Pending: []Gang{batch(4*time.Hour + 31*time.Minute)}})
	if len(d.Preemptions) != 1 {
		t.Fatalf("preemptions = %+v, want one once the budget's 4 hours are over", d.Preemptions)
	}
	// A larger budget covers the loss at once (100 × 0.5h × 8 = 400).
	d = Schedule(checkpointFleet(t), Input{Now: now, Pending: []Gang{batch(time.Hour)}}, WithPreemptionLossBudget(100, 0))
	if len(d.Preemptions) != 1 {
		t.Fatalf("budget 100: preemptions = %+v, want one", d.Preemptions)
	}
	// A queue that reclaims its quota is not held to the budget.
	rq := batch(time.Hour)
	rq.Queue = "lender"
	d = Schedule(checkpointFleet(t), Input{Now: now, Pending: []Gang{rq}, Queues: []Queue{{Name: "lender", Reclaim: true}}})
	if len(d.Preemptions) != 1 {
		t.Fatalf("reclaiming queue: preemptions = %+v, want one", d.Preemptions)
	}
	// A victim about to checkpoint costs nothing: preempted at once.
	s := checkpointFleet(t)
	for _, at := range []time.Time{t0.Add(time.Hour), t0.Add(2 * time.Hour)} {
		_ = s.Checkpointed("b", at)
	}
	d = Schedule(s, Input{Now: now.Add(-3 * time.Minute), Pending: []Gang{batch(time.Hour)}})
	if len(d.Preemptions) != 1 || d.Preemptions[0].Victim != "b" {
		t.Fatalf("preemptions = %+v, want b", d.Preemptions)
	}
	// Without the budget the batch gang preempts at once.
	d = Schedule(checkpointFleet(t), Input{Now: now, Pending: []Gang{batch(time.Hour)}}, WithPreemptionLossBudget(-1, 0))
	if len(d.Preemptions) != 1 {
		t.Fatalf("budget off: preemptions = %+v", d.Preemptions)
	}
}

func TestCheckpointedInterval(t *testing.T) {
	s := checkpointFleet(t)
	if err := s.Checkpointed("nope", t0); !errors.Is(err, ErrUnknownGang) {
		t.Fatalf("unknown gang: %v", err)
	}
	_ = s.Checkpointed("a", t0.Add(40*time.Minute))
	_ = s.Checkpointed("a", t0.Add(30*time.Minute)) // older: ignored
	al, _ := s.allocs.get("a")
	if !al.LastCheckpoint.Equal(t0.Add(40*time.Minute)) || al.CheckpointInterval != 40*time.Minute {
		t.Fatalf("last %v interval %v", al.LastCheckpoint, al.CheckpointInterval)
	}
	_ = s.Checkpointed("a", t0.Add(65*time.Minute))
	if al.CheckpointInterval != 25*time.Minute {
		t.Fatalf("interval %v, want 25m", al.CheckpointInterval)
	}
}

func TestPreemptionWaitsForAVictimsCheckpointDueSoon(t *testing.T) {
	prod := func(now time.Time) Gang {
		g := newGang("prod", 1, 8).priority(PriorityProduction, false).obj()
		g.Submitted = now.Add(-2 * time.Hour)
		return g
	}
	// a checkpoints hourly (t0+1h, t0+2h); b never did, so it loses more.
	s := checkpointFleet(t)
	for _, at := range []time.Time{t0.Add(time.Hour), t0.Add(2 * time.Hour)} {
		_ = s.Checkpointed("a", at)
	}
	// At t0+2h50m, preempting a loses 55 minutes × 8 GPUs; its report is
	// due in 10 minutes, less than that for the 8 waiting GPUs: wait.
	now := t0.Add(2*time.Hour + 50*time.Minute)
	if d := Schedule(s, Input{Now: now, Pending: []Gang{prod(now)}}); len(d.Preemptions) != 0 {
		t.Fatalf("preempted %+v 10 minutes before its checkpoint", d.Preemptions)
	}
	// At t0+2h20m it loses 25 minutes × 8 GPUs, less than 40 minutes of
	// waiting: preempt now.
	now = t0.Add(2*time.Hour + 20*time.Minute)
	if d := Schedule(s, Input{Now: now, Pending: []Gang{prod(now)}}); len(d.Preemptions) != 1 || d.Preemptions[0].Victim != "a" {
		t.Fatalf("preemptions = %+v, want a", d.Preemptions)
	}
	// Right after the report at t0+3h it loses only its grace: preempted.
	_ = s.Checkpointed("a", t0.Add(3*time.Hour))
	now = t0.Add(3 * time.Hour)
	if d := Schedule(s, Input{Now: now, Pending: []Gang{prod(now)}}); len(d.Preemptions) != 1 || d.Preemptions[0].Victim != "a" {
		t.Fatalf("after the report: preemptions = %+v, want a", d.Preemptions)
	}
}

func TestPreemptionCountsTheGPUsItStrands(t *testing.T) {
	// Two racks of two 8-GPU nodes: big (2×8) fills one and saved 20
	// minutes ago; small (1×8, never saved) and a production gang the other.
	c := fleetSpec{name: "c", racks: 2, perRack: 2, gpus: 8}.cluster()
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	startAtT0(t, s,
		newGang("big", 2, 8).priority(PriorityDevelopment, true).required(inventory.LevelRack).obj(),
		newGang("small", 1, 8).priority(PriorityDevelopment, true).obj(),
		newGang("run", 1, 8).priority(PriorityProduction, false).obj())
	now := t0.Add(55 * time.Minute)
	_ = s.Checkpointed("big", now.Add(-20*time.Minute))
	prod := newGang("prod", 1, 8).priority(PriorityProduction, false).required(inventory.LevelRack).obj()
	prod.Submitted = now.Add(-2 * time.Hour)
	// big loses 25 minutes × 16 GPUs (6.7 GPU-hours) but strands 8 GPUs
	// (2 more); small loses 1 hour × 8 GPUs (8) and strands none.
	d := Schedule(s, Input{Now: now, Pending: []Gang{prod}})
	if len(d.Preemptions) != 1 || d.Preemptions[0].Victim != "small" {
		t.Fatalf("preemptions = %+v, want small", d.Preemptions)
	}
}
