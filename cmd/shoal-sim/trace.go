// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/shoal-dev/shoal/federation/sim"
)

// traceFlags locate a recorded fleet and workload to replay.
type traceFlags struct {
	workload, fleet, mapping string
}

// formatOf is the format a file's name implies: .jsonl / .ndjson are JSON lines, anything else CSV.
func formatOf(path string) sim.Format {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson":
		return sim.FormatJSONL
	}
	return sim.FormatCSV
}

// load reads the three files into a trace named after the workload file.
func (tf traceFlags) load() (*sim.Trace, error) {
	if tf.fleet == "" || tf.mapping == "" {
		return nil, fmt.Errorf("-trace needs -trace-fleet and -trace-mapping")
	}
	ff, err := os.Open(tf.fleet)
	if err != nil {
		return nil, err
	}
	defer ff.Close()
	fleet, err := sim.ReadFleet(ff, formatOf(tf.fleet))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tf.fleet, err)
	}
	mf, err := os.Open(tf.mapping)
	if err != nil {
		return nil, err
	}
	defer mf.Close()
	m, err := sim.ReadMapping(mf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tf.mapping, err)
	}
	wf, err := os.Open(tf.workload)
	if err != nil {
		return nil, err
	}
	defer wf.Close()
	jobs, skipped, err := sim.ReadWorkload(wf, m, fleet)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tf.workload, err)
	}
	name := strings.TrimSuffix(filepath.Base(tf.workload), filepath.Ext(tf.workload))
	fmt.Fprintf(os.Stderr, "trace %s: %d jobs (%d rows left out) on %d clusters\n", name, len(jobs), skipped, len(fleet))
	return &sim.Trace{Name: name, Clusters: fleet, Jobs: jobs, Skipped: skipped}, nil
}
