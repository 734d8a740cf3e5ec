// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"runtime/metrics"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/internal/cputime"
)

var (
	cycles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_scheduler_cycles_total",
		Help: "Scheduling cycles, by result (ok, conflict, error).",
	}, []string{"result"})
	placed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shoal_scheduler_placed_total",
		Help: "Gangs booked by the scheduler.",
	})
	waiting = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shoal_scheduler_waiting_jobs",
		Help: "Pending jobs left waiting by the last cycle.",
	})
	leader = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shoal_scheduler_leader",
		Help: "1 while this replica leads the scheduler election.",
	})
	cacheEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_scheduler_cache_events_total",
		Help: "Store changes applied to the scheduler's watch-fed caches, by kind.",
	}, []string{"kind"})
	preemptions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shoal_scheduler_preemptions_total",
		Help: "Running jobs the scheduler marked preempted.",
	})
	preemptionLoss = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shoal_scheduler_preemption_lost_gpu_hours_total",
		Help: "GPU-hours of work the marked preemptions were expected to lose: each victim's GPUs from its last reported checkpoint (or start) to the end of its grace, nothing when its next checkpoint falls within it.",
	})
	snapshotLayouts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shoal_scheduler_snapshot_layouts_total",
		Help: "Cycles that laid the fleet's nodes and domains out afresh for their placement snapshot (a node or cluster came or went, or a node's topology, allocatable GPUs, product, taints or pool changed); the others reuse the last layout.",
	})
	pauses = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shoal_scheduler_paced_cycles_total",
		Help: "Cycles that waited after a change so as not to run back to back with the last one, which placed and preempted nothing (scheduler Config.Pace: a pause as long as that cycle took).",
	})
	explanationsWritten = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_scheduler_explanations_total",
		Help: "Waiting jobs' explanations written, by kind: first (a job's first) or changed (changed in meaning).",
	}, []string{"kind"})
	explanationsBehind = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shoal_scheduler_explanations_behind",
		Help: "Waiting jobs whose explanation changed in meaning and was left to later cycles by the explanation rate, after the last cycle.",
	})
	cyclePhases = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_scheduler_cycle_phase_seconds_total",
		Help: "Wall time scheduling cycles spent in each phase: read (the caches' snapshot, waiting for them to reach the leader's own writes), input (the pending gangs, counts, fair share), snapshot (the placement snapshot), decide (the placement engine), book (bookings and head-of-queue holds), explain (waiting jobs' explanations), preempt, status (gauges and queue statuses).",
	}, []string{"phase"})
	cacheRelists = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_scheduler_cache_relists_total",
		Help: "Lists of a kind after its cache's watch ended (compacted history, a lost store), by kind.",
	}, []string{"kind"})
)

// Register registers the scheduler's metrics.
func Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{cycles, placed, waiting, leader, preemptions, preemptionLoss, cacheEvents, cacheRelists, snapshotLayouts, pauses, cycleDuration, cycleCPU, cyclePhases, explanationsWritten, explanationsBehind, admissionWait, fleetGauges} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func observeCycle(r Result) {
	if r.Conflict {
		cycles.WithLabelValues("conflict").Inc()
	} else {
		cycles.WithLabelValues("ok").Inc()
	}
	placed.Add(float64(len(r.Placed)))
	waiting.Set(float64(r.Waiting))
}

// phaseClock adds each phase of a cycle to cyclePhases as it ends (wall
// time, like the cycle's own duration), and keeps them for the log of a
// slow cycle (logSlow).
type phaseClock struct {
	start, last time.Time
	phases      []any // name, milliseconds, … as log keys and values
	// waits say what phase "wait" waited for (fleet.waits).
	waits []any
	gcs   uint64
	// cpu0 is the thread's CPU time at the start, lastCPU at the end of
	// the last phase; threadCPU says the cycle runs on a thread of its own
	// (Lead) so that it is the cycle's. cpus are the phases' CPU
	// milliseconds as log keys ("cpu.read") and values.
	cpu0, lastCPU time.Duration
	threadCPU     bool
	cpus          []any
	// delay0 is the thread's run delay at the start (cputime.RunDelay),
	// when runDelay says the kernel accounts it.
	delay0   time.Duration
	runDelay bool
	// slow is the duration from which the cycle is logged (Config.SlowCycle).
	slow time.Duration
}

// newPhaseClock starts a cycle's clock; threadCPU says the cycle runs
// locked to its OS thread, whose CPU time is then the cycle's; a cycle
// that takes slow or more is logged.
func newPhaseClock(threadCPU bool, slow time.Duration) *phaseClock {
	now := time.Now()
	p := &phaseClock{start: now, last: now, gcs: gcCycles(), slow: slow}
	if threadCPU {
		p.cpu0, p.threadCPU = cputime.Thread()
		p.lastCPU = p.cpu0
		p.delay0, p.runDelay = cputime.RunDelay()
	}
	return p
}

// phaseCPU adds the CPU time since the last phase ended to phase's.
func (p *phaseClock) phaseCPU(phase string) {
	if !p.threadCPU {
		return
	}
	now, _ := cputime.Thread()
	p.cpus = append(p.cpus, "cpu."+phase, (now - p.lastCPU).Milliseconds())
	p.lastCPU = now
}

// cpu is the CPU time the cycle has taken on its thread so far, and
// whether it is known.
func (p *phaseClock) cpu() (time.Duration, bool) {
	if !p.threadCPU {
		return 0, false
	}
	now, ok := cputime.Thread()
	return now - p.cpu0, ok
}

// end records the cycle's CPU time (when known) and logs it when slow.
func (p *phaseClock) end(logger klog.Logger, res Result, pending, reservations int) {
	cpu, ok := p.cpu()
	if ok {
		cycleCPU.Observe(cpu.Seconds())
	}
	p.logSlow(logger, res, pending, reservations, cpu, ok)
}

// done ends phase: the time since the last phase ended (or the clock began).
func (p *phaseClock) done(phase string) {
	now := time.Now()
	p.add(phase, now.Sub(p.last))
	p.phaseCPU(phase)
	p.last = now
}

// doneWaiting ends phase, of which waited was spent waiting (for the
// caches to reach a revision, for the store's answer): counted as phase
// "wait", the rest as phase.
func (p *phaseClock) doneWaiting(phase string, waited time.Duration, waits []any) {
	p.waits = append(p.waits, waits...)
	now := time.Now()
	waited = min(waited, now.Sub(p.last))
	p.add("wait", waited)
	p.add(phase, now.Sub(p.last)-waited)
	p.phaseCPU(phase)
	p.last = now
}

func (p *phaseClock) add(phase string, d time.Duration) {
	cyclePhases.WithLabelValues(phase).Add(d.Seconds())
	p.phases = append(p.phases, phase, d.Milliseconds())
}

// DefaultSlowCycle is Config.SlowCycle's default.
const DefaultSlowCycle = 500 * time.Millisecond

// logSlow logs the phases of a cycle that took p.slow or more, with
// what it decided on and did, for an operator to see where a slow cycle's
// time went (the phase counters give only sums).
func (p *phaseClock) logSlow(logger klog.Logger, res Result, pending, reservations int, cpu time.Duration, cpuKnown bool) {
	took := time.Since(p.start)
	if took < p.slow {
		return
	}
	kv := []any{"tookMs", took.Milliseconds()}
	if cpuKnown {
		kv = append(kv, "cpuMs", cpu.Milliseconds())
		if d, ok := cputime.RunDelay(); ok && p.runDelay {
			// The rest of the wall time the thread neither ran nor
			// waited for a core: its goroutine blocked (the phases'
			// "wait" among it) or waited for the Go scheduler.
			coreWait := d - p.delay0
			kv = append(kv, "coreWaitMs", coreWait.Milliseconds(), "offCoreMs", (took - cpu - coreWait).Milliseconds())
		}
	}
	kv = append(kv, "pending", pending, "reservations", reservations,
		"placed", len(res.Placed), "waiting", res.Waiting, "explained", res.explained, "conflict", res.Conflict,
		"gcCycles", gcCycles()-p.gcs)
	kv = append(kv, p.phases...)
	kv = append(kv, p.waits...)
	kv = append(kv, p.cpus...)
	logger.Info("slow scheduling cycle", kv...)
}

// gcCycles is the number of garbage collections the process has completed.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
