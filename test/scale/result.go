// SPDX-License-Identifier: Apache-2.0

package scale

import "time"

// Result is what one harness run measured; make bench-scale writes it as
// JSON (bench/results/scale-<time>.json).
type Result struct {
	Inputs Inputs `json:"inputs"`
	// HubStartSeconds is the hub cluster and shoal-hub start;
	// RegisterSeconds from the first agent's start to every cluster Ready
	// with its virtual nodes in the hub cluster.
	HubStartSeconds float64 `json:"hubStartSeconds"`
	RegisterSeconds float64 `json:"registerSeconds"`
	// SubmitSeconds is the whole submission; SubmitRate the jobs accepted a second over it.
	SubmitSeconds float64 `json:"submitSeconds"`
	SubmitRate    float64 `json:"submitJobsPerSecond"`
	// SubmitCall is the client-side latency of the Submit calls.
	SubmitCall   Percentiles `json:"submitCall"`
	SubmitErrors []string    `json:"submitErrors,omitempty"`
	// SubmitToPlaced is from the start of a job's Submit call to the watch
	// event that shows it past Pending, of every job placed in the run.
	SubmitToPlaced Percentiles `json:"submitToPlaced"`
	// LatePlacements are the jobs with the longest submit → placed, with
	// what their records say at the end of the run.
	LatePlacements []LatePlacement `json:"latePlacements,omitempty"`
	// OverbookedNodes counts the nodes on which the placed and running
	// jobs, at the end of the run, hold more GPUs than the node has
	// (the hub's bookings; none is the rule), OverbookedExamples names up
	// to ten.
	OverbookedNodes    int      `json:"overbookedNodes"`
	OverbookedExamples []string `json:"overbookedExamples,omitempty"`
	// Cycle is the hub's scheduling cycle histogram over the load (from
	// the first submission to the end).
	Cycle Histogram `json:"schedulingCycle"`
	// CycleCPU is the CPU time of those cycles on their own thread: the
	// cycle's cost apart from the wait for a core the machine's other
	// processes (and the hub's other goroutines) held.
	CycleCPU Histogram `json:"schedulingCycleCPU"`
	// Breakdown is more of the hub's histograms over the load (where the
	// time went: server-side submit and list, store operations, dispatch
	// phases), Counters its scheduling and dispatch counters.
	Breakdown map[string]Histogram `json:"breakdown"`
	Counters  map[string]float64   `json:"counters"`
	// CPUSeconds is the CPU time each process spent over the load
	// (LoadSeconds of wall time): shoal-hub, the hub cluster's etcd,
	// kube-apiserver and kube-controller-manager, and the harness.
	CPUSeconds  map[string]float64 `json:"cpuSeconds"`
	LoadSeconds float64            `json:"loadSeconds"`
	// HubRSS and HubPeakRSS are shoal-hub's resident memory at the end and
	// at its peak (VmRSS, VmHWM of /proc), in MiB.
	HubRSSMiB     float64 `json:"hubRSSMiB"`
	HubPeakRSSMiB float64 `json:"hubPeakRSSMiB"`
	// HubAnonMiB and HubFileMiB split HubRSSMiB at the end: the process's
	// own memory (RssAnon: the Go heap, stacks, the runtime) and pages of
	// files it maps (RssFile: the embedded etcd's database, read through
	// mmap, which the kernel may drop and read again).
	HubAnonMiB float64 `json:"hubAnonMiB"`
	HubFileMiB float64 `json:"hubFileMiB"`
	// HubHeap is the hub's Go heap at the end (heap.go).
	HubHeap Heap `json:"hubHeap"`
	// HeapProfile is the file of the hub's heap profile at the end
	// (SCALE_HEAP_PROFILE), or HeapProfileError why it was not recorded.
	HeapProfile      string `json:"heapProfile,omitempty"`
	HeapProfileError string `json:"heapProfileError,omitempty"`
	// HarnessRSSMiB is the harness process (agents, in-memory clusters) at the end.
	HarnessRSSMiB float64 `json:"harnessRSSMiB"`
	// Lists are whole job lists (every page of 500) at the end of the load.
	Lists []ListTiming `json:"lists"`
	// InventoryToHub is node cordon → visible in the hub's stored inventory.
	InventoryToHub Percentiles `json:"inventoryToHub"`
	InventoryError string      `json:"inventoryError,omitempty"`
	// CPUProfile is the file of the hub's CPU profile (SCALE_CPU_PROFILE),
	// or CPUProfileError why it was not recorded.
	CPUProfile      string `json:"cpuProfile,omitempty"`
	CPUProfileError string `json:"cpuProfileError,omitempty"`
	// Jobs is where the jobs ended: placed (ever), ran (every member
	// Running at some time), phases now.
	Jobs JobCounts `json:"jobs"`
	// Members are what the simulated kubelets did; Overbooked the binds
	// refused because a GPU was booked twice.
	MembersRan      int      `json:"membersRan"`
	MembersFinished int      `json:"membersFinished"`
	Overbooked      []string `json:"overbooked,omitempty"`
}

// Inputs are the run's knobs.
type Inputs struct {
	Clusters   int      `json:"clusters"`
	Nodes      int      `json:"nodesPerCluster"`
	GPUs       int      `json:"gpus"`
	Profiles   []string `json:"profiles"`
	Jobs       int      `json:"jobs"`
	Rate       float64  `json:"rate"`
	Submitters int      `json:"submitters"`
	Gangs      []Gang   `json:"gangs"`
	RunMin     string   `json:"runMin"`
	RunMax     string   `json:"runMax"`
	Hold       string   `json:"hold"`
	// HubArgs are the flags given to shoal-hub besides the harness's own
	// (SCALE_HUB_ARGS, and --profiling when profiles are taken).
	HubArgs []string `json:"hubArgs,omitempty"`
	// HubEnv is what SCALE_HUB_ENV added to the hub's environment.
	HubEnv []string `json:"hubEnv,omitempty"`
}

// ListTiming is one timed job list.
type ListTiming struct {
	Filter  string  `json:"filter"`
	Items   int     `json:"items"`
	Seconds float64 `json:"seconds"`
	// Repeats is the same list timed again, 200 ms apart, after the first
	// (the filter that matches none, a single call each: a single sample
	// moved by tens of milliseconds between runs on the loaded machine).
	Repeats *Percentiles `json:"repeats,omitempty"`
}

// JobCounts say where the jobs ended.
type JobCounts struct {
	Placed  int            `json:"placed"`
	Ran     int            `json:"ran"`
	Aborted int            `json:"abortedOnce"`
	Phases  map[string]int `json:"phases"`
}

// LatePlacement is one of a run's slowest placements: the job, its submit
// → placed, when its Submit call began (seconds after the load's start)
// and, read from the hub at the end of the run, its spec's size,
// priority and queue, its epoch and restarts, and its conditions.
type LatePlacement struct {
	Job           string   `json:"job"`
	Seconds       float64  `json:"seconds"`
	SubmittedAtS  float64  `json:"submittedAtSeconds"`
	Members       int32    `json:"members,omitempty"`
	GPUsPerMember int32    `json:"gpusPerMember,omitempty"`
	Priority      string   `json:"priority,omitempty"`
	Queue         string   `json:"queue,omitempty"`
	Phase         string   `json:"phase,omitempty"`
	Epoch         int64    `json:"epoch,omitempty"`
	Restarts      int32    `json:"restarts,omitempty"`
	Conditions    []string `json:"conditions,omitempty"`
	Error         string   `json:"error,omitempty"`
	submitted     time.Time
}
