// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/shoal-dev/shoal/federation/placement"
)

// SizeClasses are the gang-size classes queueing delay is reported by.
var SizeClasses = []string{"1-8", "16-64", "128-256", "512-1024"}

func sizeClass(gpus int) string {
	switch {
	case gpus <= 8:
		return SizeClasses[0]
	case gpus <= 64:
		return SizeClasses[1]
	case gpus <= 256:
		return SizeClasses[2]
	}
	return SizeClasses[3]
}

// Result is one strategy's figures from one run (JSON in bench/results).
type Result struct {
	Strategy string  `json:"strategy"`
	Fleet    string  `json:"fleet"`
	GPUs     int     `json:"gpus"`
	Load     float64 `json:"load"`
	Seed     uint64  `json:"seed"`
	Horizon  string  `json:"horizon"`
	Warmup   string  `json:"warmup"`
	// OfferedLoad is the realised ρ of the generated jobs; Bound is min(1, ρ).
	OfferedLoad float64 `json:"offeredLoad"`
	Bound       float64 `json:"bound"`
	// Allocation is the time-averaged share of GPUs held by running gangs in the window.
	Allocation float64 `json:"allocation"`
	// Goodput is Allocation less the work lost to preemptions and node
	// failures in the window (it is run again later, so it also inflates Allocation).
	Goodput float64 `json:"goodput"`
	// NVLinkMinShare and RackMinShare are the shares of gangs placed in the
	// fewest NVLink domains / racks feasible at decision time.
	NVLinkMinShare float64 `json:"nvlinkMinShare"`
	RackMinShare   float64 `json:"rackMinShare"`
	// Broken rules, counted by an independent checker: all must be 0.
	RequiredViolations int `json:"requiredViolations"`
	PartialGangs       int `json:"partialGangs"`
	DoubleBookings     int `json:"doubleBookings"`
	IneligibleNodes    int `json:"ineligibleNodes"`
	// Queueing delay in minutes by size class, over gangs started in the window.
	DelayP50 map[string]float64 `json:"delayP50Minutes"`
	DelayP99 map[string]float64 `json:"delayP99Minutes"`
	// ProductionDelayP50/P99 are the queueing delays of production (non-preemptible, top priority) gangs, minutes.
	ProductionDelayP50 float64 `json:"productionDelayP50Minutes"`
	ProductionDelayP99 float64 `json:"productionDelayP99Minutes"`
	// Jain is Jain's index over the queues' weighted allocation while they
	// had backlog, averaged over the window; JainInstant averages the index
	// of instantaneous samples over the queues with backlog at each sample.
	Jain        float64 `json:"jain"`
	JainInstant float64 `json:"jainInstant"`
	Preemptions int     `json:"preemptions"`
	// PreemptionsByPreemptor counts preemptions by the preemptor's priority class.
	PreemptionsByPreemptor map[string]int `json:"preemptionsByPreemptor,omitempty"`
	PreemptionGPUHoursLost float64        `json:"preemptionGPUHoursLost"`
	NodeFailures           int            `json:"nodeFailures"`
	FailureGPUHoursLost    float64        `json:"failureGPUHoursLost"`
	Jobs                   int            `json:"jobs"`
	Started                int            `json:"started"`
	PendingAtEnd           int            `json:"pendingAtEnd"`
	Cycles                 int            `json:"cycles"`
	WallSeconds            float64        `json:"wallSeconds"`
	// Fragmentation is the time-averaged share of the fleet's GPUs that were
	// free while gangs waited but that no waiting gang could use: on nodes
	// with fewer free GPUs than any waiting gang's member needs, or of a
	// product none of them accepts. FreeWhileWaiting is the share of GPUs
	// free at those samples; BackloggedSamples how many samples had a
	// waiting gang (one per CycleEvery).
	Fragmentation     float64 `json:"fragmentation"`
	FreeWhileWaiting  float64 `json:"freeWhileWaiting"`
	BackloggedSamples int     `json:"backloggedSamples"`
	// DelayAllP50/P99 are the queueing delays of every gang started in the
	// window (submit or requeue to start), minutes.
	DelayAllP50 float64 `json:"delayAllP50Minutes"`
	DelayAllP99 float64 `json:"delayAllP99Minutes"`
	// JCT is job completion time (submit to finish, queueing and restarts
	// included) of the jobs that arrived in the window and finished, minutes.
	JCTP50  float64 `json:"jctP50Minutes"`
	JCTP99  float64 `json:"jctP99Minutes"`
	JCTMean float64 `json:"jctMeanMinutes"`
	// Finished counts jobs that ran to their end.
	Finished int `json:"finished"`
	// Starts lists every gang start in order (Config.RecordStarts).
	Starts []Start `json:"starts,omitempty"`
	// With Config.Shared: FractionalGPUs is the time-averaged share of the
	// fleet's GPUs fractional members take from gangs (the whole GPUs they
	// hold, or the shared nodes' GPUs), WholeForGangs the rest (the whole
	// GPUs kept for gangs), GangAllocation the share held by the other
	// gangs. Fractional members' delays are the class "fractional".
	FractionalGPUs float64 `json:"fractionalGPUs,omitempty"`
	WholeForGangs  float64 `json:"wholeForGangs,omitempty"`
	GangAllocation float64 `json:"gangAllocation,omitempty"`
}

// Start is one start of a gang in a run.
type Start struct {
	// Job is the gang's ID.
	Job string `json:"job"`
	// At is when it started, since the start of the run.
	At time.Duration `json:"at"`
	// Clusters are the clusters its members run in, sorted.
	Clusters []string `json:"clusters"`
}

type metrics struct {
	from, to        time.Duration
	total           int
	alloc           int
	allocByQueue    map[string]int
	backlogByQueue  map[string]int
	effWeight       map[string]float64
	allocGPUHours   float64
	offered         float64
	delays          map[string][]float64
	prodDelays      []float64
	scored, nvOK    int
	rackOK, started int
	jainSum         float64
	jainN           int
	backlogAlloc    map[string]float64 // GPU-seconds held while backlogged
	backlogTime     map[string]float64 // seconds backlogged
	lastSample      time.Duration
	preemptLost     float64
	windowLost      float64 // GPU-hours lost in the window
	failLost        float64
	preemptions     int
	byPreemptor     map[string]int
	failures        int
	cycles          int
	leaves          []string
	allDelays       []float64
	jcts            []float64
	finished        int
	fragSum         float64
	freeSum         float64
	fragN           int
	starts          []Start
	record          bool
	fracAlloc       int     // GPUs taken by fractional members: whole GPUs they hold, or the shared nodes'
	fracGPUHours    float64 // fracAlloc integrated over the window
	gangGPUHours    float64 // GPUs held by the other gangs, integrated over the window
	gangAlloc       int
}

func newMetrics(cfg Config, total int, queues []placement.Queue, leaves []LeafQueue) *metrics {
	m := &metrics{from: cfg.Warmup, to: cfg.Workload.Horizon, total: total, record: cfg.RecordStarts, allocByQueue: map[string]int{},
		backlogByQueue: map[string]int{}, byPreemptor: map[string]int{}, backlogAlloc: map[string]float64{}, backlogTime: map[string]float64{}, delays: map[string][]float64{}, effWeight: map[string]float64{}}
	w := map[string]float64{}
	for _, q := range queues {
		w[q.Name] = q.Weight
	}
	for _, l := range leaves {
		m.leaves = append(m.leaves, l.Name)
	}
	for _, l := range m.leaves {
		m.effWeight[l] = effectiveWeight(l, w, m.leaves)
	}
	return m
}

// effectiveWeight is the leaf's share of the fleet by the tree's weights:
// the product over its path of weight / sum of sibling weights.
func effectiveWeight(leaf string, w map[string]float64, leaves []string) float64 {
	weight := func(q string) float64 {
		if x, ok := w[q]; ok && x > 0 {
			return x
		}
		return 1
	}
	share := 1.0
	parts := strings.Split(leaf, "/")
	for i := range parts {
		q := strings.Join(parts[:i+1], "/")
		parent := strings.Join(parts[:i], "/")
		sum := 0.0
		seen := map[string]bool{}
		for _, l := range leaves {
			lp := strings.Split(l, "/")
			if len(lp) <= i || strings.Join(lp[:i], "/") != parent {
				continue
			}
			sib := strings.Join(lp[:i+1], "/")
			if !seen[sib] {
				seen[sib] = true
				sum += weight(sib)
			}
		}
		share *= weight(q) / sum
	}
	return share
}

func (m *metrics) integrate(t0, t1 time.Duration) {
	a, b := max(t0, m.from), min(t1, m.to)
	if b > a {
		m.allocGPUHours += float64(m.alloc) * (b - a).Hours()
		m.fracGPUHours += float64(m.fracAlloc) * (b - a).Hours()
		m.gangGPUHours += float64(m.gangAlloc) * (b - a).Hours()
	}
}

// hold counts a job's whole GPUs as held (sign 1) or given back (-1), and
// apart for fractional members and the other gangs.
func (m *metrics) hold(js *jobState, sign int) {
	g := sign * js.wholeGPUs()
	m.allocate(js.Gang.Queue, g)
	if isFractional(&js.Gang) {
		m.fracAlloc += g
	} else {
		m.gangAlloc += g
	}
}

func (m *metrics) allocate(queue string, gpus int) {
	m.alloc += gpus
	m.allocByQueue[queue] += gpus
}

func (m *metrics) backlog(queue string, n int) { m.backlogByQueue[queue] += n }

func (m *metrics) placed(js *jobState, p placement.Placement, now time.Duration) {
	if m.record {
		m.starts = append(m.starts, Start{Job: js.Gang.ID, At: now, Clusters: clustersOf(p)})
	}
	if now < m.from {
		return
	}
	m.started++
	c := sizeClass(js.Gang.GPUs())
	if isFractional(&js.Gang) {
		c = classFractional
	}
	m.delays[c] = append(m.delays[c], (now - js.queuedAt).Minutes())
	m.allDelays = append(m.allDelays, (now - js.queuedAt).Minutes())
	if js.Gang.Priority >= placement.PriorityProduction {
		m.prodDelays = append(m.prodDelays, (now - js.queuedAt).Minutes())
	}
	if q := p.Quality; q != nil {
		m.scored++
		if q.MinNVLinkDomains == 0 || q.NVLinkDomains <= q.MinNVLinkDomains {
			m.nvOK++
		}
		if q.MinRacks == 0 || q.Racks <= q.MinRacks {
			m.rackOK++
		}
	}
}

// sample adds one Jain's-index sample over the queues with backlog.
func (m *metrics) sample(now time.Duration) {
	if now < m.from {
		m.lastSample = now
		return
	}
	dt := (now - max(m.lastSample, m.from)).Seconds()
	m.lastSample = now
	var sum, sq float64
	n := 0
	for _, q := range m.leaves {
		if m.backlogByQueue[q] <= 0 {
			continue
		}
		m.backlogAlloc[q] += float64(m.allocByQueue[q]) * dt
		m.backlogTime[q] += dt
		x := float64(m.allocByQueue[q]) / m.effWeight[q]
		sum += x
		sq += x * x
		n++
	}
	if n < 2 {
		return
	}
	j := 1.0
	if sq > 0 {
		j = sum * sum / (float64(n) * sq)
	}
	m.jainSum += j
	m.jainN++
}

func (m *metrics) result(cfg Config, name string, e *engine, wall time.Duration) Result {
	hours := (m.to - m.from).Hours()
	r := Result{Strategy: name, Fleet: cfg.Fleet, GPUs: m.total, Load: cfg.Workload.Load, Seed: cfg.Workload.Seed,
		Horizon: cfg.Workload.Horizon.String(), Warmup: cfg.Warmup.String(),
		OfferedLoad:        m.offered / (float64(m.total) * cfg.Workload.Horizon.Hours()),
		Allocation:         m.allocGPUHours / (float64(m.total) * hours),
		RequiredViolations: e.check.required, PartialGangs: e.check.partial, DoubleBookings: e.check.double,
		IneligibleNodes: e.check.ineligible, DelayP50: map[string]float64{}, DelayP99: map[string]float64{},
		Preemptions: m.preemptions, PreemptionsByPreemptor: m.byPreemptor, PreemptionGPUHoursLost: m.preemptLost, NodeFailures: m.failures,
		FailureGPUHoursLost: m.failLost, Jobs: len(e.jobs), Started: m.started, PendingAtEnd: len(e.pending),
		Cycles: m.cycles, WallSeconds: wall.Seconds()}
	if cfg.Trace != nil {
		// A replay's window is the whole run, its offered load the work over
		// the span from the first to the last arrival.
		r.Fleet, r.Horizon = cfg.Trace.Name, (m.to - m.from).String()
		if cfg.Workload.Horizon <= 0 {
			r.OfferedLoad = 0
		}
		if hours <= 0 {
			r.Allocation, hours = 0, 1
		}
	}
	r.Bound = math.Min(1, r.OfferedLoad)
	r.Goodput = r.Allocation - m.windowLost/(float64(m.total)*hours)
	if m.scored > 0 {
		r.NVLinkMinShare = float64(m.nvOK) / float64(m.scored)
		r.RackMinShare = float64(m.rackOK) / float64(m.scored)
	}
	if m.jainN > 0 {
		r.JainInstant = m.jainSum / float64(m.jainN)
	}
	r.Jain = m.longRunJain()
	if ds := m.prodDelays; len(ds) > 0 {
		slices.Sort(ds)
		r.ProductionDelayP50, r.ProductionDelayP99 = round(ds[len(ds)/2]), round(ds[len(ds)*99/100])
	}
	r.DelayAllP50, r.DelayAllP99 = percentiles(m.allDelays)
	r.JCTP50, r.JCTP99 = percentiles(m.jcts)
	if len(m.jcts) > 0 {
		sum := 0.0
		for _, x := range m.jcts {
			sum += x
		}
		r.JCTMean = round(sum / float64(len(m.jcts)))
	}
	r.Finished, r.Starts = m.finished, m.starts
	if m.fragN > 0 {
		r.Fragmentation = m.fragSum / float64(m.fragN)
		r.FreeWhileWaiting = m.freeSum / float64(m.fragN)
	}
	r.BackloggedSamples = m.fragN
	if cfg.Shared != nil && hours > 0 {
		r.FractionalGPUs = m.fracGPUHours / (float64(m.total) * hours)
		r.WholeForGangs = 1 - r.FractionalGPUs
		r.GangAllocation = m.gangGPUHours / (float64(m.total) * hours)
	}
	for c, ds := range m.delays {
		slices.Sort(ds)
		r.DelayP50[c] = round(ds[len(ds)/2])
		r.DelayP99[c] = round(ds[len(ds)*99/100])
	}
	return r
}

func round(x float64) float64 { return math.Round(x*10) / 10 }

// longRunJain is Jain's index over queues of (mean GPUs held while
// backlogged) / weight.
func (m *metrics) longRunJain() float64 {
	var sum, sq float64
	n := 0
	for _, q := range m.leaves {
		t := m.backlogTime[q]
		if t <= 0 {
			continue
		}
		x := m.backlogAlloc[q] / t / m.effWeight[q]
		sum += x
		sq += x * x
		n++
	}
	if n == 0 || sq == 0 {
		return 0
	}
	return sum * sum / (float64(n) * sq)
}

// lost records GPU-hours of work lost at now.
func (m *metrics) lost(now time.Duration, gpuHours float64) {
	if now >= m.from && now <= m.to {
		m.windowLost += gpuHours
	}
}

// percentiles returns the rounded p50 and p99 of xs (0, 0 when empty), sorting xs.
func percentiles(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	slices.Sort(xs)
	return round(xs[len(xs)/2]), round(xs[len(xs)*99/100])
}

// completed records a job that ran to its end.
func (m *metrics) completed(js *jobState) {
	m.finished++
	if js.Arrival >= m.from && js.Arrival <= m.to {
		m.jcts = append(m.jcts, (js.finished - js.Arrival).Minutes())
	}
}

// fragment samples the free GPUs no waiting gang can use (Result.Fragmentation).
func (m *metrics) fragment(e *engine) {
	if e.now < m.from || e.now > m.to || len(e.pending) == 0 || m.total == 0 {
		return
	}
	type need struct {
		gpm      int
		products []string
	}
	var needs []need
	seen := map[string]bool{}
	for _, js := range e.pending {
		g := js.Gang
		if g.Shared != nil {
			continue // shares, not whole GPUs
		}
		gpm := g.GPUsPerMember
		for _, r := range g.Roles {
			if r.GPUsPerMember > 0 && (gpm == 0 || r.GPUsPerMember < gpm) {
				gpm = r.GPUsPerMember
			}
		}
		if gpm == 0 {
			continue
		}
		k := fmt.Sprint(gpm, g.Products)
		if !seen[k] {
			seen[k] = true
			needs = append(needs, need{gpm, g.Products})
		}
	}
	free, unusable := 0, 0
	for _, n := range e.check.nodes {
		f := n.gpus - n.used
		if !n.up || f <= 0 {
			continue
		}
		free += f
		usable := false
		for _, nd := range needs {
			if nd.gpm <= f && (len(nd.products) == 0 || contains(nd.products, n.product)) {
				usable = true
				break
			}
		}
		if !usable {
			unusable += f
		}
	}
	m.fragSum += float64(unusable) / float64(m.total)
	m.freeSum += float64(free) / float64(m.total)
	m.fragN++
}

func clustersOf(p placement.Placement) []string {
	var out []string
	for _, a := range p.Assignments {
		if !contains(out, a.Cluster) {
			out = append(out, a.Cluster)
		}
	}
	slices.Sort(out)
	return out
}
