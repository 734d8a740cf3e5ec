// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func newServiceGetCommand(dial servicesDial) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "get NAME...",
		Short:   "Show inference services by name: model (old → new while a rollout runs), ready replicas, load",
		Example: "  shoal service get chat\n  shoal service get chat -o wide\n  shoal service get chat -o yaml",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			var ss []*v1alpha1.InferenceService
			for _, name := range args {
				s, _, err := getService(cmd, cl, name)
				if err != nil {
					return err
				}
				ss = append(ss, s)
			}
			var v any = outList(ss)
			if len(ss) == 1 {
				v = ss[0]
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, v); ok {
				return err
			}
			return printServiceTable(cmd.OutOrStdout(), ss, output == "wide", time.Now())
		},
	}
	outFlag(cmd, &output)
	return cmd
}

func newServiceListCommand(dial servicesDial) *cobra.Command {
	var output, queue string
	cmd := &cobra.Command{
		Use:     "list [--queue Q]",
		Aliases: []string{"ls"},
		Short:   "List the inference services you may see, all or one queue's",
		Example: "  shoal service list\n  shoal service list --queue research/nlp -o wide",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			ss, err := listServices(cmd, cl, queue)
			if err != nil {
				return err
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, outList(ss)); ok {
				return err
			}
			if len(ss) == 0 {
				what := "No inference services found"
				if queue != "" {
					what += " in queue " + queue
				}
				fmt.Fprintln(cmd.OutOrStdout(), what+": create one with `shoal service create -f`.")
				return nil
			}
			return printServiceTable(cmd.OutOrStdout(), ss, output == "wide", time.Now())
		},
	}
	cmd.Flags().StringVar(&queue, "queue", "", "only this queue's services")
	_ = cmd.RegisterFlagCompletionFunc("queue", completeQueueNames)
	outFlag(cmd, &output)
	return cmd
}

// listServices returns the services of queue (all when empty) the caller may see.
func listServices(cmd *cobra.Command, cl shoalv1.InferenceClient, queue string) ([]*v1alpha1.InferenceService, error) {
	resp, err := cl.List(cmd.Context(), &shoalv1.ListInferenceServicesRequest{Queue: queue})
	if err != nil {
		what := "list inference services"
		if queue != "" {
			what += " of queue " + queue
		}
		return nil, outCallError(what, err)
	}
	ss := make([]*v1alpha1.InferenceService, 0, len(resp.Items))
	for _, o := range resp.Items {
		s, err := decodeService(o)
		if err != nil {
			return nil, err
		}
		ss = append(ss, s)
	}
	return ss, nil
}

func newServiceDescribeCommand(dial servicesDial) *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Show an inference service's spec summary, status, load, last rollout, conditions and endpoints",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			obj, err := cl.Get(cmd.Context(), &shoalv1.GetInferenceServiceRequest{Name: args[0]})
			if err != nil {
				return outCallError("describe inferenceservice/"+args[0], err)
			}
			s, err := decodeService(obj)
			if err != nil {
				return err
			}
			return describeService(cmd.OutOrStdout(), s, time.Now())
		},
	}
}

func newServiceEndpointsCommand(dial servicesDial) *cobra.Command {
	var output string
	var ready bool
	cmd := &cobra.Command{
		Use:   "endpoints NAME [--ready]",
		Short: "List an inference service's replicas as a router sees them: cluster, address:port, model, readiness",
		Long: "Lists the service's endpoints (status.endpoints): member 0 of each replica, its cluster, address and " +
			"port, the model version it serves and whether every member of the replica is ready. --ready keeps " +
			"the ready ones, what a router should send requests to. -o json|yaml prints them as a plain list.",
		Example: "  shoal service endpoints chat --ready\n  shoal service endpoints chat --ready -o json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			s, _, err := getService(cmd, cl, args[0])
			if err != nil {
				return err
			}
			eps := serviceEndpoints(s, ready)
			if ok, err := outStructured(cmd.OutOrStdout(), output, eps); ok {
				return err
			}
			if len(eps) == 0 {
				what := "No endpoints"
				if ready {
					what = "No ready endpoints"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s of inferenceservice/%s yet (%d of %d replicas ready).\n", what, s.Name,
					s.Status.ReadyReplicas, s.Status.DesiredReplicas)
				return nil
			}
			return printServiceEndpoints(cmd.OutOrStdout(), "", eps, output == "wide")
		},
	}
	cmd.Flags().BoolVar(&ready, "ready", false, "only the endpoints whose replica is ready")
	outFlag(cmd, &output)
	return cmd
}

// serviceEndpoints is s's endpoint list (only the ready ones with ready),
// never nil, so that -o json prints [].
func serviceEndpoints(s *v1alpha1.InferenceService, ready bool) []v1alpha1.ServiceEndpoint {
	eps := []v1alpha1.ServiceEndpoint{}
	for _, e := range s.Status.Endpoints {
		if e.Ready || !ready {
			eps = append(eps, e)
		}
	}
	return eps
}

// serviceModel is the model the service serves as stable, with "→ TO"
// while a rollout to TO progresses.
func serviceModel(s *v1alpha1.InferenceService) string {
	m := outDash(s.Status.Model)
	if ro := s.Status.Rollout; ro != nil && ro.Phase == v1alpha1.ServiceRolloutProgressing {
		m += " → " + ro.To
	}
	return m
}

// serviceLoad is the service's reported load, "-" when none.
func serviceLoad(s *v1alpha1.InferenceService) string {
	if l := s.Status.Load; l != nil {
		return strconv.FormatInt(l.Value, 10)
	}
	return "-"
}

// serviceClusters are the distinct clusters of the service's endpoints, in order.
func serviceClusters(s *v1alpha1.InferenceService) string {
	var cs []string
	seen := map[string]bool{}
	for _, e := range s.Status.Endpoints {
		if e.Cluster != "" && !seen[e.Cluster] {
			seen[e.Cluster] = true
			cs = append(cs, e.Cluster)
		}
	}
	sortStrings(cs)
	return outDash(strings.Join(cs, ","))
}

// printServiceTable writes services as a table; wide adds the replica
// bounds and the clusters their endpoints are in.
func printServiceTable(w io.Writer, ss []*v1alpha1.InferenceService, wide bool, now time.Time) error {
	tw := outTable(w)
	hdr := "NAME\tQUEUE\tMODEL\tREADY\tLOAD\tAGE"
	if wide {
		hdr += "\tMIN\tMAX\tCLUSTERS"
	}
	fmt.Fprintln(tw, hdr)
	for _, s := range ss {
		st := s.Status
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s", s.Name, s.Spec.Queue, serviceModel(s), st.ReadyReplicas, st.DesiredReplicas,
			serviceLoad(s), outAge(s.CreationTimestamp, now))
		if wide {
			fmt.Fprintf(tw, "\t%d\t%d\t%s", s.Spec.Replicas.Min, s.Spec.Replicas.Max, serviceClusters(s))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// printServiceEndpoints writes endpoints as a table, each line indented by
// indent; wide adds each replica's revision.
func printServiceEndpoints(w io.Writer, indent string, eps []v1alpha1.ServiceEndpoint, wide bool) error {
	tw := outTable(w)
	hdr := "REPLICA\tCLUSTER\tADDRESS:PORT\tMODEL\tREADY"
	if wide {
		hdr += "\tREVISION"
	}
	fmt.Fprintln(tw, indent+hdr)
	for _, e := range eps {
		addr := "-"
		if e.Address != "" {
			addr = net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port)))
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%t", indent, e.Replica, outDash(e.Cluster), addr, outDash(e.Model), e.Ready)
		if wide {
			fmt.Fprintf(tw, "\t%s", outDash(e.Revision))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// describeService writes a service for people, kubectl-describe style.
func describeService(w io.Writer, s *v1alpha1.InferenceService, now time.Time) error {
	tw := outTable(w)
	sp, st := s.Spec, s.Status
	p := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s:\t"+format+"\n", append([]any{k}, a...)...) }
	at := func(t *metav1.Time) string {
		if t == nil || t.IsZero() {
			return "-"
		}
		return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), outAge(*t, now))
	}
	p("Name", "%s", s.Name)
	p("Queue", "%s", sp.Queue)
	p("Owner", "%s", outDash(st.Owner))
	prio, _ := sp.PriorityClass.Value()
	p("Priority", "%s (%d)", sp.PriorityClass, prio)
	p("Model", "%s", sp.Model)
	p("Replicas", "min %d, max %d; %d member(s) of %d GPU(s) each", sp.Replicas.Min, sp.Replicas.Max, sp.Members, sp.GPUsPerMember)
	p("Port", "%d", sp.Port)
	p("Placement", "%s, topology %s", outDash(string(sp.Placement.Spread)), topologyText(sp.Placement.Topology))
	if sel := sp.Placement.ClusterSelector; sel != nil {
		p("Cluster selector", "%s", metav1.FormatLabelSelector(sel))
	}
	if len(sp.Placement.GPUProducts) > 0 {
		p("GPU products", "%s", strings.Join(sp.Placement.GPUProducts, ", "))
	}
	if a := sp.Autoscaling; a != nil {
		scaling := fmt.Sprintf("%d per replica, scale down after %ds", a.TargetPerReplica, a.ScaleDownDelaySeconds)
		if m := a.Metric; m != nil {
			scaling += fmt.Sprintf(", agents read %s on :%d%s", m.Name, sp.ServiceMetricPort(), m.Path)
		}
		p("Autoscaling", "%s", scaling)
	} else {
		p("Autoscaling", "off (min replicas)")
	}
	p("Rollout policy", "max surge %d, progress deadline %ds", sp.Rollout.MaxSurge, sp.Rollout.ProgressDeadlineSeconds)
	for _, c := range sp.Template.Spec.Containers {
		p("Container "+c.Name, "%s", c.Image)
	}
	p("Created", "%s", at(&s.CreationTimestamp))
	p("Serving", "%s (revision %s)", outDash(st.Model), outDash(st.Revision))
	p("Ready", "%d/%d (%d replica jobs running)", st.ReadyReplicas, st.DesiredReplicas, st.Replicas)
	p("Last scale", "%s", at(st.LastScaleTime))
	if l := st.Load; l != nil {
		p("Load", "%d (%d source(s))", l.Value, len(l.Sources))
	} else {
		p("Load", "<none reported>")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	describeServiceLoad(w, st.Load, now)
	if err := describeServiceRollout(w, st.Rollout, now); err != nil {
		return err
	}
	describeConditions(w, st.Conditions, now)
	fmt.Fprintln(w, "Endpoints:")
	if len(st.Endpoints) == 0 {
		_, err := fmt.Fprintln(w, "  <none yet: no replica is placed>")
		return err
	}
	return printServiceEndpoints(w, "  ", st.Endpoints, false)
}

// describeServiceLoad writes the latest report of each load source.
func describeServiceLoad(w io.Writer, l *v1alpha1.ServiceLoad, now time.Time) {
	if l == nil || len(l.Sources) == 0 {
		return
	}
	fmt.Fprintln(w, "Load sources:")
	tw := outTable(w)
	fmt.Fprintln(tw, "  SOURCE\tVALUE\tAGE")
	for _, src := range l.Sources {
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", src.Source, src.Value, outAge(src.Time, now))
	}
	_ = tw.Flush()
}

// describeServiceRollout writes the last rollout, if there was one.
func describeServiceRollout(w io.Writer, ro *v1alpha1.ServiceRolloutStatus, now time.Time) error {
	fmt.Fprintln(w, "Rollout:")
	if ro == nil {
		_, err := fmt.Fprintln(w, "  <none>")
		return err
	}
	tw := outTable(w)
	p := func(k, format string, a ...any) { fmt.Fprintf(tw, "  %s:\t"+format+"\n", append([]any{k}, a...)...) }
	p("Model", "%s → %s (revision %s)", outDash(ro.From), ro.To, outDash(ro.Revision))
	p("Phase", "%s", ro.Phase)
	if ro.StartTime != nil {
		p("Started", "%s ago", outAge(*ro.StartTime, now))
	}
	if ro.ProgressTime != nil {
		p("Last progress", "%s ago", outAge(*ro.ProgressTime, now))
	}
	if ro.Message != "" {
		p("Message", "%s", ro.Message)
	}
	return tw.Flush()
}

// completeServiceNames completes service names with the given prefix,
// for every argument when many, else only the first.
func completeServiceNames(dial servicesDial, many bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 && !many {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cl, done, err := dial(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer done()
		resp, err := cl.List(cmd.Context(), &shoalv1.ListInferenceServicesRequest{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, o := range resp.Items {
			if s, err := decodeService(o); err == nil && strings.HasPrefix(s.Name, prefix) {
				names = append(names, s.Name)
				if len(names) == completionLimit {
					break
				}
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
