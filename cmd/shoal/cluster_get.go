// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
)

// maxDomainsShown caps each topology level's rows in table output (wide shows all).
const maxDomainsShown = 10

func newClusterGetCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:               "get NAME",
		Aliases:           []string{"describe"},
		Short:             "Show a cluster: state, GPU pools and topology domains with free GPUs",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			cl, closeConn, err := clustersClient(cmd)
			if err != nil {
				return err
			}
			defer closeConn()
			obj, err := cl.GetCluster(cmd.Context(), &shoalv1.GetClusterRequest{Name: args[0]})
			if err != nil {
				return err
			}
			c, err := decodeCluster(obj)
			if err != nil {
				return err
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, c); ok {
				return err
			}
			inv, err := getInventory(cmd.Context(), cl, c.Name)
			if err != nil {
				return err
			}
			return describeCluster(cmd.OutOrStdout(), c, inv, output == "wide")
		},
	}
	outFlag(cmd, &output)
	return cmd
}

func describeCluster(w io.Writer, c *v1alpha1.Cluster, inv *inventory.Cluster, wide bool) error {
	tw := outTable(w)
	fmt.Fprintf(tw, "Name:\t%s\n", c.Name)
	fmt.Fprintf(tw, "UID:\t%s\n", c.Spec.UID)
	state := outDash(string(c.Status.State))
	if cond := meta.FindStatusCondition(c.Status.Conditions, "Ready"); cond != nil {
		state += fmt.Sprintf(" (%s: %s)", cond.Reason, cond.Message)
	}
	fmt.Fprintf(tw, "State:\t%s\n", state)
	fmt.Fprintf(tw, "Cordoned:\t%v\n", c.Spec.Unschedulable)
	if hc := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ClusterConditionHubClusterReachable); hc != nil && hc.Status == metav1.ConditionFalse {
		fmt.Fprintf(tw, "Hub cluster:\t%s: %s\n", hc.Reason, hc.Message)
	}
	if d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ClusterConditionDrained); d != nil {
		fmt.Fprintf(tw, "Drain:\t%s: %s\n", d.Reason, d.Message)
	}
	if len(c.Spec.DrainedNodes) > 0 {
		fmt.Fprintf(tw, "Drained nodes:\t%s\n", strings.Join(c.Spec.DrainedNodes, ", "))
	}
	fmt.Fprintf(tw, "Labels:\t%s\n", clusterLabels(c.Labels))
	fmt.Fprintf(tw, "Agent version:\t%s\n", outDash(c.Status.AgentVersion))
	last := "-"
	if hb := c.Status.LastHeartbeat; hb != nil {
		last = fmt.Sprintf("%s (%s)", hb.UTC().Format("2006-01-02T15:04:05Z"), clusterAge(&hb.Time))
	}
	fmt.Fprintf(tw, "Last heartbeat:\t%s\n", last)
	if r := c.Status.RegisteredTime; r != nil {
		fmt.Fprintf(tw, "Registered:\t%s\n", r.UTC().Format("2006-01-02T15:04:05Z"))
	}
	describeTopology(tw, c)
	describeGitOps(tw, c)
	if err := tw.Flush(); err != nil {
		return err
	}
	if inv == nil {
		_, err := fmt.Fprintln(w, "\nInventory: none reported yet")
		return err
	}
	fmt.Fprintf(w, "\nGPU pools (inventory generation %d, %d nodes):\n", inv.Generation, len(inv.Nodes))
	tw = outTable(w)
	fmt.Fprintln(tw, "  POOL\tPRODUCT\tRESOURCE\tNODES\tCAPACITY\tFREE\tLARGEST FREE ON ONE NODE")
	for _, p := range inv.Pools() {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%d\n", p.Name, outDash(p.Product), p.Resource, p.Nodes, p.Capacity, p.Free, p.LargestNodeFree)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range []inventory.Level{inventory.LevelNVLink, inventory.LevelRack, inventory.LevelBlock} {
		if err := describeDomains(w, inv, l, wide); err != nil {
			return err
		}
	}
	return nil
}

// describeDomains prints a level's domains, most free GPUs first.
func describeDomains(w io.Writer, inv *inventory.Cluster, l inventory.Level, wide bool) error {
	domains := inv.Domains(l)
	if len(domains) == 0 {
		return nil
	}
	sort.SliceStable(domains, func(i, j int) bool { return domains[i].Free > domains[j].Free })
	fmt.Fprintf(w, "\nTopology %s domains (%d):\n", l, len(domains))
	tw := outTable(w)
	fmt.Fprintln(tw, "  "+strings.ToUpper(string(l))+"\tNODES\tGPUS\tFREE\tLARGEST FREE ON ONE NODE")
	shown := domains
	if !wide && len(shown) > maxDomainsShown {
		shown = shown[:maxDomainsShown]
	}
	for _, d := range shown {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\n", outDash(d.Name), d.Nodes, d.GPUs, d.Free, d.LargestNodeFree)
	}
	if len(shown) < len(domains) {
		fmt.Fprintf(tw, "  … %d more (-o wide shows all)\n", len(domains)-len(shown))
	}
	return tw.Flush()
}

// describeTopology adds the node labels the agent reads as topology, and
// says so when the cluster's GPU nodes carry none of them.
func describeTopology(tw io.Writer, c *v1alpha1.Cluster) {
	if c.Status.Inventory == nil || c.Status.Inventory.Topology == nil {
		return
	}
	t := c.Status.Inventory.Topology
	name := t.Preset
	if name == "" {
		name = "no preset"
	}
	var keys []string
	for _, kv := range [][2]string{{"nvlink", t.NVLinkKey}, {"rack", t.RackKey}, {"block", t.BlockKey}, {"zone", t.ZoneKey}} {
		if kv[1] != "" {
			keys = append(keys, kv[0]+"="+kv[1])
		}
	}
	fmt.Fprintf(tw, "Topology:\t%s (%s) %s\n", name, t.Source, outDash(strings.Join(keys, ",")))
	if t.Message != "" {
		fmt.Fprintf(tw, "Topology warning:\t%s\n", t.Message)
	}
}

// describeGitOps adds the cluster's GitOps source, rollout pin and sync status.
func describeGitOps(tw io.Writer, c *v1alpha1.Cluster) {
	s, g := c.Spec.GitOps, c.Status.GitOps
	if s == nil {
		fmt.Fprintf(tw, "GitOps source:\t-\n")
	} else {
		src := fmt.Sprintf("%s %s", s.URL, refString(s.Ref))
		if s.Path != "" {
			src += " path " + s.Path
		}
		if s.SecretRef != "" {
			src += " secret " + s.SecretRef
		}
		if s.Prune {
			src += " prune"
		}
		fmt.Fprintf(tw, "GitOps source:\t%s\n", src)
	}
	if g == nil {
		if s != nil {
			fmt.Fprintf(tw, "GitOps status:\tnot reported yet\n")
		}
		return
	}
	if g.PinnedCommit != "" {
		fmt.Fprintf(tw, "GitOps pin:\t%s (rollout %s)\n", g.PinnedCommit, outDash(g.PinnedBy))
	}
	applied := outDash(g.Revision)
	if t := g.LastAppliedTime; t != nil {
		applied += fmt.Sprintf(" at %s", t.UTC().Format("2006-01-02T15:04:05Z"))
	}
	fmt.Fprintf(tw, "GitOps applied:\t%s\n", applied)
	health := outDash(string(g.Health))
	if g.HealthMessage != "" {
		health += " (" + g.HealthMessage + ")"
	}
	fmt.Fprintf(tw, "GitOps health:\t%s, %d objects, %d drifted in the last sync\n", health, g.InventorySize, len(g.Drifted))
	if g.Message != "" {
		fmt.Fprintf(tw, "GitOps error:\t%s (attempted %s)\n", g.Message, outDash(g.AttemptedRevision))
	}
}
