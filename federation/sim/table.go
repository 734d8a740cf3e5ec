// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// PrintTable writes results as an aligned table, one row per run.
func PrintTable(w io.Writer, rs []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fleet\tload\tstrategy\tρ\talloc\tgoodput\tbound\tnvlink-min\track-min\treq-viol\tpartial\tdouble\tjain\tjain-inst\tp50 1-8\tp99 1-8\tp50 128-256\tp99 128-256\tp99 512+\tprod p99\tpreempt GPU-h\tpending\twall s\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%.2f\t%.3f\t%.3f\t%.3f\t%.1f%%\t%.1f%%\t%d\t%d\t%d\t%.3f\t%.3f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%d\t%.1f\t\n",
			r.Fleet, r.Load, r.Strategy, r.OfferedLoad, r.Allocation, r.Goodput, r.Bound, 100*r.NVLinkMinShare, 100*r.RackMinShare,
			r.RequiredViolations, r.PartialGangs, r.DoubleBookings, r.Jain, r.JainInstant,
			r.DelayP50["1-8"], r.DelayP99["1-8"], r.DelayP50["128-256"], r.DelayP99["128-256"], r.DelayP99["512-1024"], r.ProductionDelayP99,
			r.PreemptionGPUHoursLost, r.PendingAtEnd, r.WallSeconds)
	}
	_ = tw.Flush()
}

// PrintTraceTable writes the results of trace replays, one row per strategy.
func PrintTraceTable(w io.Writer, rs []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "trace\tstrategy\tGPUs\tjobs\tfinished\tpending\tρ\talloc\tfrag\tfree-waiting\tdelay p50\tdelay p99\tJCT p50\tJCT p99\tJCT mean\treq-viol\tpartial\tdouble\tpreemptions\tspan\twall s\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%.2f\t%.3f\t%.3f\t%.3f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%d\t%d\t%d\t%s\t%.1f\t\n",
			r.Fleet, r.Strategy, r.GPUs, r.Jobs, r.Finished, r.PendingAtEnd, r.OfferedLoad, r.Allocation, r.Fragmentation, r.FreeWhileWaiting,
			r.DelayAllP50, r.DelayAllP99, r.JCTP50, r.JCTP99, r.JCTMean, r.RequiredViolations, r.PartialGangs, r.DoubleBookings,
			r.Preemptions, r.Horizon, r.WallSeconds)
	}
	_ = tw.Flush()
}
