// SPDX-License-Identifier: Apache-2.0

// Command shoal-sim runs the fleet simulator: Shoal's scheduler and the
// baselines over the same generated fleets, workloads and node failures.
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
}

func run() error {
	fleets := flag.String("fleets", "F-S:168h,F-M:48h", "fleet:horizon pairs (F-S, F-M, F-L, F-XL)")
	loads := flag.String("loads", "0.7,0.9,1.1", "offered loads ρ")
	strategies := flag.String("strategies", strings.Join(sim.StrategyNames, ","), "strategies to compare")
	seed := flag.Uint64("seed", 1, "random seed (same seed: same jobs and failures for every strategy)")
	failures := flag.Float64("failures", 0.01, "expected fraction of nodes failing per day")
	ckpt := flag.Bool("checkpoint-on-preempt", false, "preemption victims save their work in their grace period (default: they lose the work since their last hourly checkpoint)")
	parallel := flag.Int("parallel", runtime.GOMAXPROCS(0), "runs at once")
	out := flag.String("out", "", "write the results as JSON to this file")
	profile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	parse := flag.String("parse-bench", "", "instead of simulating, turn this `go test -bench` output into medians (JSON with -out)")
	flag.Parse()
	if *parse != "" {
		return runParseBench(*parse, *out)
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
				specs = append(specs, runSpec{name, horizon, load, s})
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
			cfg := sim.Config{Fleet: sp.fleet, Workload: sim.DefaultWorkload(sp.load, sp.horizon, *seed),
				NodeFailuresPerDay: *failures, CheckpointOnPreempt: *ckpt}
			results[i], errs[i] = sim.Run(cfg, sp.strategy)
			fmt.Fprintf(os.Stderr, "done %s load %.1f %s in %.1fs\n", sp.fleet, sp.load, sp.strategy, results[i].WallSeconds)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	sim.PrintTable(os.Stdout, results)
	if *out != "" {
		b, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(*out, append(b, '\n'), 0o644)
	}
	return nil
}
