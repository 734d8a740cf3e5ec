// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
)

// Config is one simulation run.
type Config struct {
	// Fleet names the generated fleet (F-S, F-M, F-L, F-XL).
	Fleet string
	// Workload is the job mix and load.
	Workload Workload
	// Warmup is left out of the measurements (default a fifth of the horizon).
	Warmup time.Duration
	// CycleEvery is how often the scheduler runs when something changed (default 30s).
	CycleEvery time.Duration
	// NodeFailuresPerDay is the expected fraction of nodes failing per day (rolling failures).
	NodeFailuresPerDay float64
	// RepairTime is how long a failed node stays down (default 4h).
	RepairTime time.Duration
	// CheckpointEvery is how often jobs save their work (default 1h).
	CheckpointEvery time.Duration
	// CheckpointOnPreempt makes preemption victims save their work during
	// their grace period, so only node failures lose work. Off by default:
	// the figures then count the worst case, work since the last periodic
	// checkpoint.
	CheckpointOnPreempt bool
	// Trace, when set, replays a recorded fleet and workload instead of
	// Fleet and Workload's generated ones (Workload.Seed still seeds node
	// failures). The scheduler then runs right after every instant at which
	// something changed, as the hub's does (CycleEvery only paces the
	// samples), there is no warm-up, and the run goes on after the last
	// arrival until every job has finished or none can start any more.
	Trace *Trace
	// RecordStarts lists every start of a gang in Result.Starts.
	RecordStarts bool
	// Shared, when set, adds fractional members and, with Pack, shared-GPU
	// nodes to a generated run (shared.go).
	Shared *SharedMix
}

func (c *Config) defaults() {
	if c.Trace != nil {
		c.Warmup = 0
		if n := len(c.Trace.Jobs); n > 0 {
			c.Workload.Horizon = c.Trace.Jobs[n-1].Arrival
		}
	} else if c.Warmup == 0 {
		c.Warmup = c.Workload.Horizon / 5
	}
	if c.CycleEvery == 0 {
		c.CycleEvery = 30 * time.Second
	}
	if c.RepairTime == 0 {
		c.RepairTime = 4 * time.Hour
	}
	if c.CheckpointEvery == 0 {
		c.CheckpointEvery = time.Hour
	}
}

type evKind int

const (
	evArrive evKind = iota
	evFinish
	evEvict
	evFail
	evRepair
	evTick
	evCheckpoint
)

type event struct {
	at      time.Duration
	seq     int
	kind    evKind
	job     int // job index, or node index for failures
	attempt int
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	if e[i].at != e[j].at {
		return e[i].at < e[j].at
	}
	return e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// jobState is a job's life in the run.
type jobState struct {
	Job
	idx         int
	remaining   time.Duration
	attempt     int
	queuedAt    time.Duration
	started     time.Duration
	finished    time.Duration
	running     bool
	pending     bool
	terminating bool
	done        bool
}

// epoch is the simulated wall clock at time zero.
var epoch = time.Unix(0, 0).UTC()

// engine runs one strategy over one fleet and workload.
type engine struct {
	cfg      Config
	strategy Strategy
	snap     *placement.Snapshot
	jobs     []*jobState
	byID     map[string]*jobState
	pending  []*jobState
	ev       events
	seq      int
	now      time.Duration
	dirty    bool
	res      []placement.Reservation
	term     map[string]string
	fs       *placement.FairShare
	queues   []placement.Queue
	check    *checker
	m        *metrics
	rng      *rand.Rand
	down     map[int]bool
	nodes    []nodeRef
	// end is when a trace replay gives up on jobs that can never start.
	end           time.Duration
	done, arrived int
}

// stuck reports that nothing can change any more in a replay: every job
// arrived, none runs and no node waits for its repair, and the scheduler
// already ran after the last change, so the gangs still waiting never start.
func (e *engine) stuck() bool {
	if e.arrived < len(e.jobs) || e.m.alloc > 0 || e.dirty {
		return false
	}
	for _, ev := range e.ev {
		if ev.kind == evRepair {
			return false
		}
	}
	return true
}

type nodeRef struct{ cluster, node string }

func (e *engine) push(at time.Duration, k evKind, job, attempt int) {
	e.seq++
	heap.Push(&e.ev, event{at: at, seq: e.seq, kind: k, job: job, attempt: attempt})
}

// Run simulates one strategy and returns its figures.
func Run(cfg Config, strategyName string) (Result, error) {
	cfg.defaults()
	strategy, ok := NewStrategy(strategyName)
	if !ok {
		return Result{}, fmt.Errorf("unknown strategy %q (want one of %v)", strategyName, StrategyNames)
	}
	var clusters []inventory.Cluster
	var jobs []Job
	sharedGPUs := 0 // physical GPUs of the shared nodes
	if t := cfg.Trace; t != nil {
		if len(t.Clusters) == 0 || len(t.Jobs) == 0 {
			return Result{}, fmt.Errorf("trace %q: %d clusters, %d jobs", t.Name, len(t.Clusters), len(t.Jobs))
		}
		clusters = cloneClusters(t.Clusters)
		jobs = t.Jobs
	} else {
		var err error
		if clusters, err = Fleet(cfg.Fleet); err != nil {
			return Result{}, err
		}
		jobs = Generate(Fleets[cfg.Fleet], cfg.Workload)
		if m := cfg.Shared; m != nil {
			jobs = withFractional(jobs, m.fractional(cfg.Workload))
			if m.Pack {
				sharedGPUs = m.shareNodes(clusters)
			}
		}
	}
	e := &engine{cfg: cfg, strategy: strategy, snap: placement.NewSnapshot(clusters, nil),
		byID: map[string]*jobState{}, term: map[string]string{}, fs: placement.NewFairShare(6 * time.Hour),
		check: newChecker(clusters), rng: rand.New(rand.NewPCG(cfg.Workload.Seed, 0xfa11)), down: map[int]bool{}}
	for _, c := range clusters {
		for _, n := range c.Nodes {
			e.nodes = append(e.nodes, nodeRef{c.Name, n.Name})
		}
	}
	total, _ := e.snap.GPUs()
	total += sharedGPUs
	leaves := Leaves
	if cfg.Trace != nil {
		e.queues, leaves = cfg.Trace.Queues(), cfg.Trace.leaves()
	} else {
		e.queues = Queues(total)
	}
	e.m = newMetrics(cfg, total, e.queues, leaves)
	e.m.fracAlloc = sharedGPUs
	for i, j := range jobs {
		js := &jobState{Job: j, idx: i, remaining: j.Duration}
		if _, dup := e.byID[j.Gang.ID]; dup {
			return Result{}, fmt.Errorf("job %q listed twice", j.Gang.ID)
		}
		e.jobs = append(e.jobs, js)
		e.byID[j.Gang.ID] = js
		e.push(j.Arrival, evArrive, i, 0)
		e.m.offered += float64(js.wholeGPUs()) * j.Duration.Hours()
		e.end = max(e.end, j.Arrival) + j.Duration
	}
	if cfg.Trace != nil {
		// Every job run one after the other after the last arrival: a
		// replay still going then waits for a gang that cannot start.
		e.end += cfg.CycleEvery
		e.m.to = e.end
	}
	e.scheduleFailure()
	e.push(cfg.CycleEvery, evTick, 0, 0)
	start := time.Now()
	e.loop()
	if cfg.Trace != nil {
		e.m.to = e.now
	}
	return e.m.result(cfg, strategyName, e, time.Since(start)), nil
}

// cloneClusters copies inventories so that a run never writes a trace's.
func cloneClusters(cs []inventory.Cluster) []inventory.Cluster {
	out := make([]inventory.Cluster, len(cs))
	for i, c := range cs {
		out[i] = c
		out[i].Nodes = append([]inventory.Node(nil), c.Nodes...)
	}
	return out
}

func (e *engine) loop() {
	trace := e.cfg.Trace != nil
	for e.ev.Len() > 0 {
		ev := heap.Pop(&e.ev).(event)
		if !trace && ev.at > e.cfg.Workload.Horizon {
			e.advance(e.cfg.Workload.Horizon)
			return
		}
		if trace && ev.at > e.end {
			e.advance(e.end)
			return
		}
		e.advance(ev.at)
		switch ev.kind {
		case evArrive:
			e.arrived++
			js := e.jobs[ev.job]
			js.queuedAt, js.pending = e.now, true
			e.pending = append(e.pending, js)
			e.m.backlog(js.Gang.Queue, +1)
			e.dirty = true
		case evFinish:
			if js := e.jobs[ev.job]; js.running && js.attempt == ev.attempt {
				e.stop(js)
				js.done, js.finished = true, e.now
				e.done++
				e.m.completed(js)
			}
		case evEvict:
			if js := e.jobs[ev.job]; js.running && js.attempt == ev.attempt {
				e.m.preemptLost += e.interrupt(js, e.cfg.CheckpointOnPreempt)
			}
		case evCheckpoint:
			if js := e.jobs[ev.job]; js.running && js.attempt == ev.attempt {
				e.checkpoint(js)
				if js.terminating { // the report ends its grace
					e.m.preemptLost += e.interrupt(js, true)
				}
			}
		case evFail:
			e.fail(ev.job)
			e.scheduleFailure()
		case evRepair:
			e.repair(ev.job)
		case evTick:
			if e.dirty {
				e.cycle()
			}
			e.m.sample(e.now)
			e.m.fragment(e)
			if trace && (e.done == len(e.jobs) || e.stuck()) {
				return
			}
			e.push(e.now+e.cfg.CycleEvery, evTick, 0, 0)
		}
		// A replay decides as the hub does: as soon as the instant's events are in.
		if trace && e.dirty && (e.ev.Len() == 0 || e.ev[0].at > e.now) {
			e.cycle()
		}
		if trace && e.done == len(e.jobs) && e.ev.Len() > 0 && e.ev[0].at > e.now {
			e.m.sample(e.now)
			e.m.fragment(e)
			return
		}
	}
}

// advance moves the clock, integrating allocation.
func (e *engine) advance(t time.Duration) {
	e.m.integrate(e.now, t)
	e.now = t
}
