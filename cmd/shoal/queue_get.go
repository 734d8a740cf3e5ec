// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func sortStrings(s []string) { sort.Strings(s) }

// decodeQueueObject reads a Queue from an API object.
func decodeQueueObject(o *shoalv1.Object) (*v1alpha1.Queue, error) {
	var q v1alpha1.Queue
	if err := json.Unmarshal(o.GetJson(), &q); err != nil {
		return nil, fmt.Errorf("the hub sent a queue this CLI cannot read (version skew?): %w", err)
	}
	return &q, nil
}

func newQueueGetCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "get NAME...",
		Short: "Show queues by name",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			cl, done, err := queuesClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			var qs []*v1alpha1.Queue
			for _, name := range args {
				obj, err := cl.Get(cmd.Context(), &shoalv1.GetQueueRequest{Name: name})
				if err != nil {
					return outCallError("get queue/"+name, err)
				}
				q, err := decodeQueueObject(obj)
				if err != nil {
					return err
				}
				qs = append(qs, q)
			}
			var v any = outList(qs)
			if len(qs) == 1 {
				v = qs[0]
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, v); ok {
				return err
			}
			tree, err := queueAncestors(cmd, cl, qs)
			if err != nil {
				return err
			}
			if err := printQueueTable(cmd.OutOrStdout(), qs, tree, output == "wide", time.Now()); err != nil {
				return err
			}
			return printQueueClasses(cmd.OutOrStdout(), qs)
		},
	}
	outFlag(cmd, &output)
	return cmd
}

// printQueueClasses lists the GPU products each quota class of the queues
// counts (the one table in apis/v1alpha1/gpuclass.go).
func printQueueClasses(w io.Writer, qs []*v1alpha1.Queue) error {
	products := map[string][]string{}
	for _, c := range v1alpha1.GPUClasses() {
		products[c.Name] = c.Products
	}
	var lines []string
	seen := map[string]bool{}
	for _, q := range qs {
		for class := range q.Spec.Quotas {
			if seen[class] {
				continue
			}
			seen[class] = true
			switch ps, ok := products[class]; {
			case ok:
				lines = append(lines, fmt.Sprintf("  %s: %s", class, strings.Join(ps, ", ")))
			case strings.HasPrefix(class, v1alpha1.MIGClassPrefix):
				lines = append(lines, fmt.Sprintf("  %s: nvidia.com/%s slices", class, class))
			default:
				lines = append(lines, fmt.Sprintf("  %s: no known products (stored before classes were checked)", class))
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	sortStrings(lines)
	_, err := fmt.Fprintf(w, "\nGPU classes:\n%s\n", strings.Join(lines, "\n"))
	return err
}

func newQueueListCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List queues with their weights and GPU quotas (nominal+borrowing limit)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			cl, done, err := queuesClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			var qs []*v1alpha1.Queue
			opts := &shoalv1.ListOptions{Limit: 500}
			for {
				resp, err := cl.List(cmd.Context(), &shoalv1.ListQueuesRequest{Options: opts})
				if err != nil {
					return outCallError("list queues", err)
				}
				for _, o := range resp.Items {
					q, err := decodeQueueObject(o)
					if err != nil {
						return err
					}
					qs = append(qs, q)
				}
				if opts.Continue = resp.GetMeta().GetContinue(); opts.Continue == "" {
					break
				}
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, outList(qs)); ok {
				return err
			}
			if len(qs) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "No queues found: create one with `shoal queue create org/team --gpu-quota h100=8`.")
				return nil
			}
			return printQueueTable(cmd.OutOrStdout(), qs, byName(qs), output == "wide", time.Now())
		},
	}
	outFlag(cmd, &output)
	return cmd
}

// classCounts renders GPUs per class as "a100=8,h100=16" ("-" for none).
func classCounts(m map[string]int32) string {
	var parts []string
	for class, n := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", class, n))
	}
	if len(parts) == 0 {
		return "-"
	}
	sortStrings(parts)
	return strings.Join(parts, ",")
}

// printQueueTable writes queues as a table, with each queue's effective
// pod-security level computed from tree (the queues by name, ancestors
// included); wide adds usage and the GPU pools its jobs may use.
func printQueueTable(w io.Writer, qs []*v1alpha1.Queue, tree map[string]*v1alpha1.Queue, wide bool, now time.Time) error {
	tw := outTable(w)
	hdr := "NAME\tWEIGHT\tQUOTAS\tPOD-SECURITY\tAGE"
	if wide {
		hdr += "\tIMPLICIT\tCREATED\tPENDING\tACTIVE\tUSED\tBORROWED\tPOOLS"
	}
	fmt.Fprintln(tw, hdr)
	for _, q := range qs {
		weight := int32(1)
		if q.Spec.Weight != nil {
			weight = *q.Spec.Weight
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s", q.Name, weight, queueQuotas(q), effectivePodSecurity(tree, q.Name),
			outAge(q.CreationTimestamp, now))
		if wide {
			fmt.Fprintf(tw, "\t%t\t%s\t%d\t%d\t%s\t%s\t%s", q.Annotations[v1alpha1.AnnotationImplicit] == "true",
				q.CreationTimestamp.UTC().Format(time.RFC3339), q.Status.PendingJobs, q.Status.ActiveJobs,
				classCounts(q.Status.UsedGPUs), classCounts(q.Status.BorrowedGPUs), effectivePools(tree, q.Name))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
