// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// jobGang renders the gang as "4x8 GPU" or "4x2 mig-1g.10gb".
func jobGang(j *v1alpha1.Job) string {
	g := j.Spec.Gang
	if g.MIG != nil {
		return fmt.Sprintf("%dx%d mig-%s", g.Members, g.MIG.PerMember, g.MIG.Profile)
	}
	return fmt.Sprintf("%dx%d GPU", g.Members, g.GPUsPerMember)
}

// jobTopology renders the topology rule as "rack (prefer nvlink)".
func jobTopology(j *v1alpha1.Job) string {
	t := j.Spec.Placement.Topology
	switch {
	case t.Required != "" && t.Preferred != "":
		return fmt.Sprintf("%s (prefer %s)", t.Required, t.Preferred)
	case t.Required != "":
		return string(t.Required)
	case t.Preferred != "":
		return "prefer " + string(t.Preferred)
	}
	return "-"
}

// printJobTable writes jobs as a table; wide adds placement details.
func printJobTable(w io.Writer, jobs []*v1alpha1.Job, wide bool, now time.Time) error {
	tw := outTable(w)
	hdr := "NAME\tQUEUE\tPHASE\tGANG\tPRIORITY\tCLUSTERS\tAGE"
	if wide {
		hdr += "\tTOPOLOGY\tPOLICY\tMAX-CLUSTERS\tRESTARTS\tEPOCH"
	}
	fmt.Fprintln(tw, hdr)
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s", j.Name, j.Spec.Queue, outDash(string(j.Status.Phase)),
			jobGang(j), j.Spec.PriorityClass, outDash(strings.Join(j.Status.Clusters(), ",")),
			outAge(j.CreationTimestamp, now))
		if wide {
			fmt.Fprintf(tw, "\t%s\t%s\t%d\t%d\t%d", jobTopology(j), j.Spec.Placement.Policy,
				j.Spec.Placement.MaxClusters, j.Status.Restarts, j.Status.Epoch)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
