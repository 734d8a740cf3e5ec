// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func newJobDescribeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a job's spec summary, status, latest checkpoint, conditions, placement and members",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, done, err := jobsClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			obj, err := cl.Get(cmd.Context(), &shoalv1.GetJobRequest{Name: args[0]})
			if err != nil {
				return outCallError("describe job/"+args[0], err)
			}
			j, err := decodeJob(obj)
			if err != nil {
				return err
			}
			return describeJob(cmd.OutOrStdout(), j, time.Now())
		},
	}
}

// describeJob writes a job for people, kubectl-describe style.
func describeJob(w io.Writer, j *v1alpha1.Job, now time.Time) error {
	tw := outTable(w)
	s := j.Spec
	p := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s:\t"+format+"\n", append([]any{k}, a...)...) }
	p("Name", "%s", j.Name)
	p("Queue", "%s", s.Queue)
	p("Owner", "%s", outDash(j.Status.Owner))
	prio, _ := s.PriorityClass.Value()
	p("Priority", "%s (%d)", s.PriorityClass, prio)
	p("Gang", "%s", jobGang(j))
	p("Placement", "max %d cluster(s), %s, topology %s", s.Placement.MaxClusters, s.Placement.Policy, jobTopology(j))
	if sel := s.Placement.ClusterSelector; sel != nil {
		p("Cluster selector", "%s", metav1.FormatLabelSelector(sel))
	}
	if len(s.Placement.GPUProducts) > 0 {
		p("GPU products", "%s", strings.Join(s.Placement.GPUProducts, ", "))
	}
	if s.RunPolicy != "" {
		p("Run policy", "%s", s.RunPolicy)
	}
	if s.FailurePolicy.MaxRestarts != nil {
		p("Failure policy", "max %d restarts, on cluster loss %s", *s.FailurePolicy.MaxRestarts, s.FailurePolicy.OnClusterLoss)
	}
	if pr := s.Preemption; pr.Preemptible != nil && pr.GracePeriodSeconds != nil {
		p("Preemption", "preemptible %t, %ds grace", *pr.Preemptible, *pr.GracePeriodSeconds)
	}
	for _, r := range s.MemberRoles() {
		prefix := ""
		if r.Name != "" {
			p("Role "+r.Name, "members %d-%d", r.First, r.First+r.Members-1)
			prefix = r.Name + " "
		}
		for _, c := range r.Template.Spec.Containers {
			p(prefix+"Container "+c.Name, "%s", c.Image)
		}
	}
	p("Created", "%s (%s ago)", j.CreationTimestamp.UTC().Format(time.RFC3339), outAge(j.CreationTimestamp, now))
	st := j.Status
	p("Phase", "%s", outDash(string(st.Phase)))
	p("Restarts", "%d", st.Restarts)
	if st.Epoch > 0 {
		p("Epoch", "%d", st.Epoch)
	}
	if pl := st.Placement; pl != nil {
		p("Placed on", "%s %s", outDash(strings.Join(pl.Clusters, ",")), pl.Domain)
		p("Explanation", "%s", outDash(pl.Explanation))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := describeCheckpoint(w, st.Checkpoint, now); err != nil {
		return err
	}
	describeConditions(w, st.Conditions, now)
	return describeMembers(w, st.Members)
}

// describeCheckpoint writes the job's latest checkpoint, if it has one.
func describeCheckpoint(w io.Writer, c *v1alpha1.JobCheckpoint, now time.Time) error {
	if c == nil {
		return nil
	}
	fmt.Fprintln(w, "Checkpoint:")
	tw := outTable(w)
	p := func(k, format string, a ...any) { fmt.Fprintf(tw, "  %s:\t"+format+"\n", append([]any{k}, a...)...) }
	at := func(t metav1.Time) string {
		if t.IsZero() {
			return "<unknown>"
		}
		return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), outAge(t, now))
	}
	p("Step", "%d", c.Step)
	p("URI", "%s", c.URI)
	p("Taken", "%s", at(c.Time))
	reported := at(c.ReportedAt) + " by " + outDash(c.ReportedBy)
	if c.Epoch > 0 {
		reported += fmt.Sprintf(", epoch %d", c.Epoch)
	}
	p("Reported", "%s", reported)
	count := fmt.Sprintf("%d", c.Count)
	if c.IntervalSeconds > 0 {
		count += fmt.Sprintf(", every ~%s", time.Duration(c.IntervalSeconds)*time.Second)
	}
	p("Checkpoints", "%s", count)
	return tw.Flush()
}

// describeConditions writes the conditions as a table.
func describeConditions(w io.Writer, conds []metav1.Condition, now time.Time) {
	fmt.Fprintln(w, "Conditions:")
	if len(conds) == 0 {
		fmt.Fprintln(w, "  <none>")
		return
	}
	tw := outTable(w)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
	for _, c := range conds {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, outAge(c.LastTransitionTime, now), c.Message)
	}
	_ = tw.Flush()
}

// describeMembers writes the members as a table.
func describeMembers(w io.Writer, members []v1alpha1.MemberStatus) error {
	fmt.Fprintln(w, "Members:")
	if len(members) == 0 {
		_, err := fmt.Fprintln(w, "  <none yet: the gang is not placed>")
		return err
	}
	tw := outTable(w)
	roles := false
	for _, m := range members {
		roles = roles || m.Role != ""
	}
	if roles {
		fmt.Fprintln(tw, "  INDEX\tROLE\tCLUSTER\tNODE\tDOMAIN\tPHASE")
	} else {
		fmt.Fprintln(tw, "  INDEX\tCLUSTER\tNODE\tDOMAIN\tPHASE")
	}
	for _, m := range members {
		role := ""
		if roles {
			role = outDash(m.Role) + "\t"
		}
		fmt.Fprintf(tw, "  %d\t%s%s\t%s\t%s\t%s\n", m.Index, role, outDash(m.Cluster), outDash(m.Node), outDash(m.Domain), outDash(string(m.Phase)))
	}
	return tw.Flush()
}
