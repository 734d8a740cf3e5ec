// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// jobGang renders the gang as "4x8 GPU" or "4x2 mig-1g.10gb", and a job
// with roles as its roles joined by "+": "launcher:1xCPU+worker:4x8 GPU".
func jobGang(j *v1alpha1.Job) string {
	if len(j.Spec.Roles) == 0 {
		return gangShape(j.Spec.Gang.Members, j.Spec.Gang.GPUsPerMember, j.Spec.Gang.MIG)
	}
	parts := make([]string, len(j.Spec.Roles))
	for i, r := range j.Spec.Roles {
		parts[i] = r.Name + ":" + gangShape(r.Members, r.GPUsPerMember, r.MIG)
	}
	return strings.Join(parts, "+")
}

// gangShape renders members of a request as "4x8 GPU", "4x2 mig-1g.10gb"
// or, with neither, "1xCPU".
func gangShape(members, gpus int32, mig *v1alpha1.MIGRequest) string {
	switch {
	case mig != nil:
		return fmt.Sprintf("%dx%d mig-%s", members, mig.PerMember, mig.Profile)
	case gpus == 0:
		return fmt.Sprintf("%dxCPU", members)
	}
	return fmt.Sprintf("%dx%d GPU", members, gpus)
}

// jobTopology renders the topology rule as "rack (prefer nvlink)".
func jobTopology(j *v1alpha1.Job) string { return topologyText(j.Spec.Placement.Topology) }

// topologyText is a topology for people: the required level, then the
// preferred one, or "-".
func topologyText(t v1alpha1.Topology) string {
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

// jobCheckpointStep is the step of the job's latest checkpoint, or "-".
func jobCheckpointStep(j *v1alpha1.Job) string {
	if c := j.Status.Checkpoint; c != nil {
		return fmt.Sprint(c.Step)
	}
	return "-"
}

// printJobTable writes jobs as a table; wide adds placement details and the
// latest checkpoint's step.
func printJobTable(w io.Writer, jobs []*v1alpha1.Job, wide bool, now time.Time) error {
	tw := outTable(w)
	hdr := "NAME\tQUEUE\tPHASE\tGANG\tPRIORITY\tCLUSTERS\tAGE"
	if wide {
		hdr += "\tTOPOLOGY\tPOLICY\tMAX-CLUSTERS\tRESTARTS\tEPOCH\tCHECKPOINT"
	}
	fmt.Fprintln(tw, hdr)
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s", j.Name, j.Spec.Queue, outDash(string(j.Status.Phase)),
			jobGang(j), j.Spec.PriorityClass, outDash(strings.Join(j.Status.Clusters(), ",")),
			outAge(j.CreationTimestamp, now))
		if wide {
			fmt.Fprintf(tw, "\t%s\t%s\t%d\t%d\t%d\t%s", jobTopology(j), j.Spec.Placement.Policy,
				j.Spec.Placement.MaxClusters, j.Status.Restarts, j.Status.Epoch, jobCheckpointStep(j))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
