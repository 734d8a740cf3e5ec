// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// PairedBaseline is the strategy PrintSeedSummary compares every other with,
// seed by seed, when it ran: the same engine without preemption.
const PairedBaseline = "shoal-no-preemption"

// PrintSeedSummary writes, for every fleet, load and strategy that ran with
// several seeds, the means over seeds with their standard errors, and the
// goodput difference from PairedBaseline over the same seeds (same jobs
// and failures), which varies far less than the goodput itself.
func PrintSeedSummary(w io.Writer, rs []Result) {
	type key struct {
		fleet    string
		load     float64
		strategy string
	}
	var order []key
	groups := map[key][]Result{}
	for _, r := range rs {
		k := key{r.Fleet, r.Load, r.Strategy}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "fleet\tload\tstrategy\tseeds\talloc\tgoodput\t± se\tgoodput − %s\t± se\tbetter in\tprod p99\tpreempt GPU-h\t\n", PairedBaseline)
	for _, k := range order {
		g := groups[k]
		base := map[uint64]float64{}
		for _, b := range groups[key{k.fleet, k.load, PairedBaseline}] {
			base[b.Seed] = b.Goodput
		}
		var alloc, good, prod, lost, diff []float64
		wins := 0
		for _, r := range g {
			alloc, good = append(alloc, r.Allocation), append(good, r.Goodput)
			prod, lost = append(prod, r.ProductionDelayP99), append(lost, r.PreemptionGPUHoursLost)
			if b, ok := base[r.Seed]; ok && k.strategy != PairedBaseline {
				diff = append(diff, r.Goodput-b)
				if r.Goodput >= b {
					wins++
				}
			}
		}
		gm, gse := meanSE(good)
		d, dse, better := "-", "-", "-"
		if len(diff) > 0 {
			m, se := meanSE(diff)
			d, dse, better = fmt.Sprintf("%+.4f", m), fmt.Sprintf("%.4f", se), fmt.Sprintf("%d/%d", wins, len(diff))
		}
		am, _ := meanSE(alloc)
		pm, _ := meanSE(prod)
		lm, _ := meanSE(lost)
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%d\t%.4f\t%.4f\t%.4f\t%s\t%s\t%s\t%.0f\t%.0f\t\n",
			k.fleet, k.load, k.strategy, len(g), am, gm, gse, d, dse, better, pm, lm)
	}
	_ = tw.Flush()
}

// meanSE returns the mean of xs and its standard error.
func meanSE(xs []float64) (mean, se float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/float64(len(xs)-1)) / math.Sqrt(float64(len(xs)))
}
