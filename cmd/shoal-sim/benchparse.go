// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// benchFigure is the median of one Go benchmark over its repeats.
type benchFigure struct {
	Name    string             `json:"name"`
	Repeats int                `json:"repeats"`
	Median  map[string]float64 `json:"median"` // unit → median value (ns/op, p99-ns, allocs/op, members/s…)
}

// parseBench reads `go test -bench` output and returns medians per benchmark.
func parseBench(r io.Reader) ([]benchFigure, error) {
	samples := map[string]map[string][]float64{}
	var order []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if samples[name] == nil {
			samples[name] = map[string][]float64{}
			order = append(order, name)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			samples[name][f[i+1]] = append(samples[name][f[i+1]], v)
		}
	}
	out := make([]benchFigure, 0, len(order))
	for _, n := range order {
		fig := benchFigure{Name: n, Median: map[string]float64{}}
		for unit, vs := range samples[n] {
			slices.Sort(vs)
			fig.Median[unit] = vs[len(vs)/2]
			fig.Repeats = len(vs)
		}
		out = append(out, fig)
	}
	return out, sc.Err()
}

// runParseBench turns raw benchmark output into JSON and a table.
func runParseBench(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	figs, err := parseBench(f)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark (median)\tns/op\tp50 ns\tp99 ns\tallocs/op\tmembers/s\t")
	for _, g := range figs {
		m := g.Median
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t\n", strings.TrimPrefix(g.Name, "Benchmark"),
			m["ns/op"], m["p50-ns"], m["p99-ns"], m["allocs/op"], m["members/s"])
	}
	_ = tw.Flush()
	if out == "" {
		return nil
	}
	b, err := json.MarshalIndent(figs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}
