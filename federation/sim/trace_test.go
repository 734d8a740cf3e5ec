// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// loadTestTrace reads testdata/simtrace-*, the trace test/integration/simtrace replays.
func loadTestTrace(t *testing.T) *Trace {
	t.Helper()
	open := func(name string) *os.File {
		f, err := os.Open("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		return f
	}
	fleet, err := ReadFleet(open("simtrace-fleet.csv"), FormatCSV)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ReadMapping(open("simtrace-mapping.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	jobs, skipped, err := ReadWorkload(open("simtrace-jobs.csv"), m, fleet)
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 0 {
		t.Fatalf("%d rows skipped", skipped)
	}
	return &Trace{Name: "simtrace", Clusters: fleet, Jobs: jobs}
}

func TestReadTestTrace(t *testing.T) {
	tr := loadTestTrace(t)
	if len(tr.Clusters) != 2 || tr.Clusters[0].Name != "gb200-2" || len(tr.Clusters[1].Nodes) != 4 || tr.Clusters[1].Nodes[3].GPUs != 8 {
		t.Fatalf("fleet = %+v", tr.Clusters)
	}
	if len(tr.Jobs) != 24 {
		t.Fatalf("%d jobs", len(tr.Jobs))
	}
	j := tr.Jobs[4] // j05,trace,360,600,4,8,H100,batch
	g := j.Gang
	if g.ID != "j05" || j.Arrival != 6*time.Minute || j.Duration != 10*time.Minute || g.Members != 4 || g.GPUsPerMember != 8 ||
		!slices.Equal(g.Products, []string{"NVIDIA-H100-80GB-HBM3"}) || g.Priority != 1000 || !g.Preemptible || g.Queue != "trace" {
		t.Errorf("j05 = %+v", j)
	}
	if j := tr.Jobs[2]; len(j.Gang.Products) != 0 {
		t.Errorf("j03 (no gpu_type) restricted to %v", j.Gang.Products)
	}
}

// TestReplayTestTrace checks the replay's figures on the test trace: every
// job runs, the rules hold, the engine's head-of-queue reservation keeps a
// small gang from jumping a waiting big one, and the metrics are filled.
func TestReplayTestTrace(t *testing.T) {
	r, err := Run(Config{Trace: loadTestTrace(t), RecordStarts: true}, "shoal")
	if err != nil {
		t.Fatal(err)
	}
	if r.Finished != 24 || r.PendingAtEnd != 0 || len(r.Starts) != 24 || r.PartialGangs+r.DoubleBookings+r.IneligibleNodes != 0 {
		t.Fatalf("result %+v", r)
	}
	gb200 := map[string]bool{}
	for _, j := range loadTestTrace(t).Jobs {
		gb200[j.Gang.ID] = slices.Equal(j.Gang.Products, []string{"NVIDIA-GB200"})
	}
	at := map[string]time.Duration{}
	for _, s := range r.Starts {
		at[s.Job] = s.At
		want := "h100-1" // the H100 gangs, and those of 8 GPUs per member that only H100 nodes have
		if gb200[s.Job] {
			want = "gb200-2"
		}
		if !slices.Equal(s.Clusters, []string{want}) {
			t.Errorf("%s ran in %v, want [%s]", s.Job, s.Clusters, want)
		}
	}
	// j05 (4×8, arrives at 6) waits for all of h100-1 until j01 ends at 20;
	// j06 (1×8, arrives at 8) does not take the node held for it meanwhile.
	if at["j05"] != 20*time.Minute || at["j06"] <= at["j05"] {
		t.Errorf("j05 started at %v, j06 at %v; want 20m, and j06 after j05", at["j05"], at["j06"])
	}
	// The trace tells the rule apart: without reservations j06 jumps j05,
	// which the fleet comparison of test/integration/simtrace would catch.
	nr, err := Run(Config{Trace: loadTestTrace(t), RecordStarts: true}, "shoal-no-reservations")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range nr.Starts {
		if s.Job == "j06" && s.At != 8*time.Minute {
			t.Errorf("shoal-no-reservations starts j06 at %v, want 8m (at once, before j05)", s.At)
		}
	}
	if r.JCTP50 <= 0 || r.JCTP99 < r.JCTP50 || r.DelayAllP99 <= 0 || r.Allocation <= 0.5 || r.Allocation > 1 ||
		r.Fragmentation <= 0 || r.Fragmentation > r.FreeWhileWaiting {
		t.Errorf("figures: alloc %.3f, JCT p50 %.1f p99 %.1f, delay p99 %.1f, fragmentation %.3f of %.3f free",
			r.Allocation, r.JCTP50, r.JCTP99, r.DelayAllP99, r.Fragmentation, r.FreeWhileWaiting)
	}
}

// TestTestTraceIsRobust is the claim test/integration/simtrace rests on:
// delaying every arrival (keeping their order) and every job's end at
// random by up to 2 trace minutes (3 s on the fleet there, 40 times
// faster, where the delay between an arrival or an end and the decision it
// causes is a few tenths of a second, on a machine with load 30 to 40 once
// up to 3.5 s) changes neither the cluster of any gang nor the order of
// any two starts in one cluster at least 3 minutes apart.
func TestTestTraceIsRobust(t *testing.T) {
	tr := loadTestTrace(t)
	base, err := Run(Config{Trace: tr, RecordStarts: true}, "shoal")
	if err != nil {
		t.Fatal(err)
	}
	const jitter, gap = 120 * time.Second, 3 * time.Minute
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 7))
		p := *tr
		p.Jobs = slices.Clone(tr.Jobs)
		// Jobs are submitted on time and in order (their submit times, and
		// so the engine's order, stay), but the scheduler may see each a
		// little late, never before the one submitted before it; each holds
		// its GPUs a little longer than its duration (the end reaches the
		// scheduler late).
		last := time.Duration(0)
		for i := range p.Jobs {
			p.Jobs[i].Arrival = max(last, p.Jobs[i].Arrival+time.Duration(rng.Int64N(int64(jitter))))
			last = p.Jobs[i].Arrival
			p.Jobs[i].Duration += time.Duration(rng.Int64N(int64(jitter)))
		}
		r, err := Run(Config{Trace: &p, RecordStarts: true}, "shoal")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]Start{}
		for _, s := range r.Starts {
			got[s.Job] = s
		}
		for i, a := range base.Starts {
			if !slices.Equal(got[a.Job].Clusters, a.Clusters) {
				t.Errorf("seed %d: %s in %v, unperturbed %v", seed, a.Job, got[a.Job].Clusters, a.Clusters)
			}
			for _, b := range base.Starts[i+1:] {
				if slices.Equal(a.Clusters, b.Clusters) && b.At-a.At >= gap && got[a.Job].At >= got[b.Job].At {
					t.Errorf("seed %d: %s (%v) no longer starts before %s (%v): %v, %v", seed, a.Job, a.At, b.Job, b.At,
						got[a.Job].At, got[b.Job].At)
				}
			}
		}
	}
}

// TestReplayEndsWhenNothingCanStart: a gang bigger than any cluster stays
// pending and the replay ends once nothing else runs.
func TestReplayEndsWhenNothingCanStart(t *testing.T) {
	fleet, err := ReadFleet(strings.NewReader("cluster,node,gpus,product,count\nc1,n,8,H100,2\n"), FormatCSV)
	if err != nil {
		t.Fatal(err)
	}
	if len(fleet) != 1 || len(fleet[0].Nodes) != 2 || fleet[0].Nodes[1].Name != "n-1" {
		t.Fatalf("fleet %+v", fleet)
	}
	m := Mapping{Columns: Columns{Submit: "t", Duration: "d", GPUs: "g"}, TimeUnit: "min", DurationUnit: "min"}
	jobs, _, err := ReadWorkload(strings.NewReader("t,d,g\n0,10,8\n5,10,24\n6,10,16\n"), m, fleet)
	if err != nil {
		t.Fatal(err)
	}
	if g := jobs[1].Gang; g.Members != 3 || g.GPUsPerMember != 8 {
		t.Fatalf("24 GPUs split into %d×%d", g.Members, g.GPUsPerMember)
	}
	r, err := Run(Config{Trace: &Trace{Name: "t", Clusters: fleet, Jobs: jobs}}, "shoal")
	if err != nil {
		t.Fatal(err)
	}
	if r.Finished != 2 || r.PendingAtEnd != 1 || r.Horizon != "20m0s" {
		t.Errorf("finished %d, pending %d, span %s; want 2, 1, 20m0s", r.Finished, r.PendingAtEnd, r.Horizon)
	}
}

func TestMappingErrorsNameTheField(t *testing.T) {
	for _, tt := range []struct{ mapping, file, want string }{
		{"columns: {submit: t, gpus: g}", "t,g\n0,1\n", "columns.duration"},
		{"columns: {submit: t, duration: d, gpus: gpu}", "t,d,g\n0,1,1\n", `columns.gpus: column "gpu" is not in the file`},
		{"columns: {submit: t, duration: d, gpus: g}\ntimeUnits: s", "", "unknown field"},
		{"columns: {submit: t, duration: d, gpus: g}", "t,d,g\n0,x,1\n", `line 2, column "d"`},
		{"columns: {submit: t, duration: d, gpus: g, priority: p}\npriorities: {hi: urgent}", "", `priorities["hi"]`},
	} {
		m, err := ReadMapping(strings.NewReader(tt.mapping))
		if err == nil {
			_, _, err = ReadWorkload(strings.NewReader(tt.file), m, nil)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("mapping %q, file %q: error %v, want one naming %s", tt.mapping, tt.file, err, tt.want)
		}
	}
}

// TestFragmentationAndJSONLines reads a fleet and a workload as JSON lines
// and checks the fragmentation figure on a case worked by hand: while B
// (2×8) waits, node a has 2 GPUs free next to A (1×6), which B's members
// cannot use, and node b 8, which they can: 2 of 16 GPUs fragmented, 10 free.
func TestFragmentationAndJSONLines(t *testing.T) {
	fleet, err := ReadFleet(strings.NewReader(`{"cluster": "c", "node": "a", "gpus": 8}
{"cluster": "c", "node": "b", "gpus": 8}
`), FormatJSONL)
	if err != nil {
		t.Fatal(err)
	}
	m := Mapping{Format: FormatJSONL, Columns: Columns{ID: "name", Submit: "at", Duration: "for", Members: "n", GPUsPerMember: "g"}}
	jobs, _, err := ReadWorkload(strings.NewReader(`{"name": "A", "at": 0, "for": "10m", "n": 1, "g": 6}
{"name": "B", "at": 60, "for": "5m", "n": 2, "g": 8}
`), m, fleet)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(Config{Trace: &Trace{Name: "frag", Clusters: fleet, Jobs: jobs}, RecordStarts: true}, "shoal")
	if err != nil {
		t.Fatal(err)
	}
	if r.Finished != 2 || r.Starts[1].Job != "B" || r.Starts[1].At != 10*time.Minute {
		t.Fatalf("starts %+v", r.Starts)
	}
	if r.BackloggedSamples == 0 || r.Fragmentation != 2.0/16 || r.FreeWhileWaiting != 10.0/16 {
		t.Errorf("fragmentation %v, free while waiting %v over %d samples; want 0.125, 0.625", r.Fragmentation, r.FreeWhileWaiting, r.BackloggedSamples)
	}
	if r.JCTP99 != 14 || r.DelayAllP99 != 9 {
		t.Errorf("JCT p99 %v, delay p99 %v; want 14 (B: 9 waiting + 5 running) and 9", r.JCTP99, r.DelayAllP99)
	}
}
