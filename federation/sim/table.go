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
