// SPDX-License-Identifier: Apache-2.0

// Command shoal-sim runs the fleet simulator: Shoal's scheduler and the
// baselines over the same generated fleets, workloads and node failures,
// or, with -trace, over a recorded fleet and workload (docs/simulator.md).
// It prints a table and, with -out, writes the results as JSON.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shoal-dev/shoal/federation/sim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "shoal-sim:", err)
		os.Exit(1)
	}
}

type runSpec struct {
	fleet    string
	horizon  time.Duration
	load     float64
	strategy string
	seed     uint64
	pack     *bool // with -shared: fractional members on GPU shares (true) or whole GPUs
}

func run() error {
	fleets := flag.String("fleets", "F-S:168h,F-M:48h", "fleet:horizon pairs (F-S, F-M, F-L, F-XL)")
	loads := flag.String("loads", "0.7,0.9,1.1", "offered loads ρ")
	strategies := flag.String("strategies", strings.Join(sim.StrategyNames, ","), "strategies to compare")
	seed := flag.Uint64("seed", 1, "random seed (same seed: same jobs and failures for every strategy)")
	seeds := flag.Int("seeds", 1, "run every fleet, load and strategy with this many seeds from -seed on and print means with their standard errors (simulations of small fleets vary much from seed to seed)")
	failures := flag.Float64("failures", 0.01, "expected fraction of nodes failing per day")
	ckpt := flag.Bool("checkpoint-on-preempt", false, "preemption victims save their work in their grace period (default: they lose the work since their last hourly checkpoint)")
	parallel := flag.Int("parallel", runtime.GOMAXPROCS(0), "runs at once")
	out := flag.String("out", "", "write the results as JSON to this file")
	profile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	parse := flag.String("parse-bench", "", "instead of simulating, turn this `go test -bench` output into medians (JSON with -out)")
	var tf traceFlags
	flag.StringVar(&tf.workload, "trace", "", "replay this workload file (CSV or JSON lines, one row per job) instead of generated ones; needs -trace-fleet and -trace-mapping")
	flag.StringVar(&tf.fleet, "trace-fleet", "", "the fleet of -trace: one row per node (cluster,node,gpus,product,clique,rack,block,zone,region,count); .jsonl for JSON lines")
	flag.StringVar(&tf.mapping, "trace-mapping", "", "YAML mapping of -trace's columns to job fields (examples/traces/)")
	starts := flag.Bool("starts", false, "with -trace, list every gang start (job, time, clusters) in the JSON of -out")
	sharedFlag := flag.String("shared", "", "RUNNING:NODES[:REPLICAS]: add fractional members (RUNNING on average) and run each spec twice, "+
		"their members on one whole GPU each (+whole-gpu) and on GPU shares of NODES shared nodes per cluster, REPLICAS shares per GPU, default 4 (+shared-pack); docs/shared-gpus.md")
	flag.Parse()
	if *parse != "" {
		return runParseBench(*parse, *out)
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if tf.workload == "" && (tf.fleet != "" || tf.mapping != "" || *starts) {
		return fmt.Errorf("-trace-fleet, -trace-mapping and -starts need -trace")
	}
	var mix *sim.SharedMix
	if *sharedFlag != "" {
		m, err := sim.ParseSharedMix(*sharedFlag)
		if err != nil {
			return err
		}
		mix = &m
	}
	if tf.workload != "" && (set["fleets"] || set["loads"] || mix != nil) {
		return fmt.Errorf("-fleets, -loads and -shared do not apply to -trace (its fleet and load are the files')")
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	if tf.workload != "" {
		tr, err := tf.load()
		if err != nil {
			return err
		}
		if !set["failures"] {
			*failures = 0 // a trace records its own runs; node failures only when asked for
		}
		return replay(tr, strings.Split(*strategies, ","), *seed, *failures, *ckpt, *starts, max(1, *parallel), *out)
	}

	var specs []runSpec
	for _, fh := range strings.Split(*fleets, ",") {
		name, h, ok := strings.Cut(fh, ":")
		if !ok {
			return fmt.Errorf("fleet %q: want NAME:HORIZON", fh)
		}
		horizon, err := time.ParseDuration(h)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(*loads, ",") {
			load, err := strconv.ParseFloat(l, 64)
			if err != nil {
				return err
			}
			for _, s := range strings.Split(*strategies, ",") {
				for k := range max(1, *seeds) {
					if mix == nil {
						specs = append(specs, runSpec{name, horizon, load, s, *seed + uint64(k), nil})
						continue
					}
					for _, pack := range []bool{false, true} {
						specs = append(specs, runSpec{name, horizon, load, s, *seed + uint64(k), &pack})
					}
				}
			}
		}
	}
	results := make([]sim.Result, len(specs))
	errs := make([]error, len(specs))
	sem := make(chan struct{}, max(1, *parallel))
	var wg sync.WaitGroup
	for i, sp := range specs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			cfg := sim.Config{Fleet: sp.fleet, Workload: sim.DefaultWorkload(sp.load, sp.horizon, sp.seed),
				NodeFailuresPerDay: *failures, CheckpointOnPreempt: *ckpt}
			if sp.pack != nil {
				m := *mix
				m.Pack = *sp.pack
				cfg.Shared = &m
			}
			results[i], errs[i] = sim.Run(cfg, sp.strategy)
			if sp.pack != nil {
				results[i].Strategy += map[bool]string{false: "+whole-gpu", true: "+shared-pack"}[*sp.pack]
			}
			fmt.Fprintf(os.Stderr, "done %s load %.1f %s seed %d in %.1fs\n", sp.fleet, sp.load, sp.strategy, sp.seed, results[i].WallSeconds)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	sim.PrintTable(os.Stdout, results)
	if mix != nil {
		fmt.Println()
		sim.PrintSharedTable(os.Stdout, results)
	}
	if *seeds > 1 {
		fmt.Println()
		sim.PrintSeedSummary(os.Stdout, results)
	}
	return writeJSON(*out, results)
}

// replay runs every strategy over one trace.
func replay(tr *sim.Trace, strategies []string, seed uint64, failures float64, ckpt, starts bool, parallel int, out string) error {
	results := make([]sim.Result, len(strategies))
	errs := make([]error, len(strategies))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, s := range strategies {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			cfg := sim.Config{Trace: tr, Workload: sim.Workload{Seed: seed}, NodeFailuresPerDay: failures,
				CheckpointOnPreempt: ckpt, RecordStarts: starts}
			results[i], errs[i] = sim.Run(cfg, s)
			fmt.Fprintf(os.Stderr, "done %s %s in %.1fs\n", tr.Name, s, results[i].WallSeconds)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	sim.PrintTraceTable(os.Stdout, results)
	return writeJSON(out, results)
}

func writeJSON(path string, results []sim.Result) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
