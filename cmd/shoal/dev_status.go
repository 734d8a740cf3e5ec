// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/internal/devfleet"
)

func newDevStatusCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the fleet's clusters, processes, GPU nodes and memory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := devfleet.Open(*dir)
			if errors.Is(err, devfleet.ErrNoFleet) {
				fmt.Fprintf(cmd.OutOrStdout(), "no fleet in %s: start one with `shoal dev up`\n", *dir)
				return nil
			}
			if err != nil {
				return err
			}
			devPrintStatus(cmd.Context(), cmd.OutOrStdout(), f)
			if f.Shoal != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "export SHOAL_CONFIG=%s\n", f.Shoal.Config)
			}
			return nil
		},
	}
}

// printStatus writes one line per cluster: server version, processes alive, nodes Ready,
// GPUs and MIG slices on Ready nodes, resident memory.
func devPrintStatus(ctx context.Context, out io.Writer, f *devfleet.Fleet) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tROLE\tPROFILE\tSERVER\tVERSION\tPROCESSES\tNODES READY\tGPUS\tMIG SLICES\tMEMORY")
	var rss int64
	for _, c := range f.Clusters {
		alive, crss := 0, int64(0)
		for _, p := range c.Processes {
			if p.Alive() {
				alive++
				crss += p.RSS()
			}
		}
		rss += crss
		version, nodes, gpus, mig := "-", "-", "-", "-"
		if alive > 0 {
			version, nodes, gpus, mig = devNodeSummary(ctx, c)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\n", c.Name, c.Role, devOrDash(c.Profile), c.Server,
			version, alive, len(c.Processes), nodes, gpus, mig, devMib(crss))
	}
	_ = w.Flush()
	devPrintShoal(ctx, out, f)
	fmt.Fprintf(out, "fleet in %s, started %s, %d of %d processes running, %s resident\n",
		f.Dir, f.StartedAt.Local().Format(time.DateTime), f.Alive(), len(f.Processes()), devMib(rss))
	if f.Alive() < len(f.Processes()) {
		fmt.Fprintln(out, "some processes are gone (see the logs in the cluster directories): `shoal dev down` cleans up, then `shoal dev up`")
	}
}

func devNodeSummary(ctx context.Context, c *devfleet.Cluster) (version, nodes, gpus, mig string) {
	cs, err := c.Clientset()
	if err != nil {
		return "?", "?", "?", "?"
	}
	version = "?"
	if v, err := cs.Discovery().ServerVersion(); err == nil {
		version = v.GitVersion
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return version, "unreachable", "?", "?"
	}
	ready, g, m := 0, int64(0), int64(0)
	for i := range list.Items {
		n := &list.Items[i]
		if !devNodeReady(n) {
			continue
		}
		ready++
		for name, q := range n.Status.Allocatable {
			switch {
			case name == devfleet.ResourceGPU:
				g += q.Value()
			case strings.HasPrefix(string(name), "nvidia.com/mig-"):
				m += q.Value()
			}
		}
	}
	return version, fmt.Sprintf("%d/%d", ready, len(list.Items)), fmt.Sprint(g), fmt.Sprint(m)
}

func devNodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func devClusterNames(f *devfleet.Fleet) string {
	names := make([]string, 0, len(f.Clusters))
	for _, c := range f.Clusters {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

func devOrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func devMib(b int64) string { return fmt.Sprintf("%d MiB", b>>20) }
