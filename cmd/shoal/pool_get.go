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

func newPoolGetCommand(dial poolsDial) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "get NAME...",
		Short: "Show GPU pools by name",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			var ps []*v1alpha1.GPUPool
			for _, name := range args {
				p, _, err := getPool(cmd, cl, "get", name)
				if err != nil {
					return err
				}
				ps = append(ps, p)
			}
			var v any = outList(ps)
			if len(ps) == 1 {
				v = ps[0]
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, v); ok {
				return err
			}
			return printPoolTable(cmd.OutOrStdout(), ps, output == "wide")
		},
	}
	outFlag(cmd, &output)
	return cmd
}

func newPoolListCommand(dial poolsDial) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List GPU pools: their clusters, nodes, GPUs in use, state and bound queues",
		Example: "  shoal pool list\n  shoal pool list -o wide",
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
			ps, err := listPools(cmd, cl)
			if err != nil {
				return err
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, outList(ps)); ok {
				return err
			}
			if len(ps) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "No GPU pools found: create one with "+
					"`shoal pool create NAME --product NVIDIA-H100-80GB-HBM3 --node-pool train`.")
				return nil
			}
			return printPoolTable(cmd.OutOrStdout(), ps, output == "wide")
		},
	}
	outFlag(cmd, &output)
	return cmd
}

// listPools returns every pool.
func listPools(cmd *cobra.Command, cl shoalv1.PoolsClient) ([]*v1alpha1.GPUPool, error) {
	resp, err := cl.List(cmd.Context(), &shoalv1.ListPoolsRequest{})
	if err != nil {
		return nil, outCallError("list gpupools", err)
	}
	ps := make([]*v1alpha1.GPUPool, 0, len(resp.Items))
	for _, o := range resp.Items {
		p, err := decodePool(o)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func newPoolDescribeCommand(dial poolsDial) *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a GPU pool's spec, status, idle and drained nodes, and bound queues",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			p, _, err := getPool(cmd, cl, "describe", args[0])
			if err != nil {
				return err
			}
			return describePool(cmd.OutOrStdout(), p, time.Now())
		},
	}
}

// poolState is Ready, Cordoned or Draining, with ",ScaleToZero" when the
// pool publishes its idle nodes.
func poolState(p *v1alpha1.GPUPool) string {
	s := "Ready"
	switch {
	case p.Spec.Drain:
		s = "Draining"
	case p.Spec.Cordoned:
		s = "Cordoned"
	}
	if p.Spec.ScaleToZero {
		s += ",ScaleToZero"
	}
	return s
}

// poolSelector renders the cluster selector, "" when it matches every cluster.
func poolSelector(p *v1alpha1.GPUPool) string {
	sel := p.Spec.ClusterSelector
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return ""
	}
	return metav1.FormatLabelSelector(sel)
}

// outJoin joins s with commas, or "-" when it is empty.
func outJoin(s []string) string { return outDash(strings.Join(s, ",")) }

// printPoolTable writes pools as a table; wide adds the idle nodes and
// what chooses the nodes.
func printPoolTable(w io.Writer, ps []*v1alpha1.GPUPool, wide bool) error {
	tw := outTable(w)
	hdr := "NAME\tCLUSTERS\tNODES\tGPUS\tFREE\tSTATE\tQUEUES"
	if wide {
		hdr += "\tIDLE\tSELECTOR\tPRODUCTS\tNODE-POOLS"
	}
	fmt.Fprintln(tw, hdr)
	for _, p := range ps {
		st := p.Status
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d/%d\t%d\t%s\t%s", p.Name, len(st.Clusters), st.Nodes, st.UsedGPUs, st.GPUs, st.FreeGPUs,
			poolState(p), outJoin(st.Queues))
		if wide {
			fmt.Fprintf(tw, "\t%d\t%s\t%s\t%s", len(st.IdleNodes), outDash(poolSelector(p)), outJoin(p.Spec.GPUProducts),
				outJoin(p.Spec.NodePools))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// describePool writes a pool for people, kubectl-describe style.
func describePool(w io.Writer, p *v1alpha1.GPUPool, now time.Time) error {
	tw := outTable(w)
	sp, st := p.Spec, p.Status
	pr := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s:\t"+format+"\n", append([]any{k}, a...)...) }
	or := func(s []string, none string) string {
		if len(s) == 0 {
			return none
		}
		return strings.Join(s, ", ")
	}
	pr("Name", "%s", p.Name)
	pr("State", "%s", poolState(p))
	sel := poolSelector(p)
	if sel == "" {
		sel = "<every cluster>"
	}
	pr("Cluster selector", "%s", sel)
	pr("GPU products", "%s", or(sp.GPUProducts, "<any>"))
	pr("Node pools", "%s", or(sp.NodePools, "<any>"))
	pr("Cordoned", "%t", sp.Cordoned)
	pr("Drain", "%t", sp.Drain)
	pr("Scale to zero", "%t", sp.ScaleToZero)
	pr("Created", "%s (%s ago)", p.CreationTimestamp.UTC().Format(time.RFC3339), outAge(p.CreationTimestamp, now))
	pr("Clusters", "%s", or(st.Clusters, "<none>"))
	pr("Nodes", "%d", st.Nodes)
	pr("GPUs", "%d (%d used, %d free)", st.GPUs, st.UsedGPUs, st.FreeGPUs)
	pr("Queues", "%s", or(st.Queues, "<none bound>"))
	if t := st.UpdateTime; t != nil && !t.IsZero() {
		pr("Status updated", "%s (%s ago)", t.UTC().Format(time.RFC3339), outAge(*t, now))
	} else {
		pr("Status updated", "<never>")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "Idle nodes:")
	switch {
	case len(st.IdleNodes) > 0:
		tw = outTable(w)
		fmt.Fprintln(tw, "  CLUSTER\tNODE\tIDLE SINCE\tFOR")
		for _, n := range st.IdleNodes {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", n.Cluster, n.Node, n.Since.UTC().Format(time.RFC3339), outAge(n.Since, now))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	case sp.ScaleToZero:
		fmt.Fprintln(w, "  <none>")
	default:
		fmt.Fprintln(w, "  <not published: scale-to-zero is off>")
	}
	fmt.Fprintln(w, "Drained nodes:")
	if len(st.Drained) == 0 {
		_, err := fmt.Fprintln(w, "  <none>")
		return err
	}
	for _, n := range st.Drained {
		if _, err := fmt.Fprintf(w, "  %s\n", n); err != nil {
			return err
		}
	}
	return nil
}

// completePoolNames completes pool names with the given prefix, for every
// argument when many, else only the first.
func completePoolNames(dial poolsDial, many bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 && !many {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cl, done, err := dial(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer done()
		resp, err := cl.List(cmd.Context(), &shoalv1.ListPoolsRequest{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, o := range resp.Items {
			if p, err := decodePool(o); err == nil && strings.HasPrefix(p.Name, prefix) {
				names = append(names, p.Name)
				if len(names) == completionLimit {
					break
				}
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
