// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// newClusterDrainCommand returns `shoal cluster drain NAME`.
func newClusterDrainCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "drain NAME",
		Short: "Cordon a cluster and move its gangs elsewhere, without counting restarts",
		Long: "drain cordons the cluster and moves every gang with a member on it: the whole gang is stopped " +
			"with its preemption grace period and requeued at once (reason Drained), without using up " +
			"failurePolicy.maxRestarts, and the scheduler places it on another cluster. The state is Draining " +
			"until no gang is left, then Cordoned (drained). `shoal cluster uncordon NAME` ends the drain.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, closeConn, err := clustersClient(cmd)
			if err != nil {
				return err
			}
			defer closeConn()
			obj, err := cl.DrainCluster(cmd.Context(), &shoalv1.DrainClusterRequest{Name: args[0]})
			if err != nil {
				return err
			}
			c, err := decodeCluster(obj)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s draining (state %s); `shoal cluster list` shows when it is drained\n",
				c.Name, c.Status.State)
			return nil
		},
	}
}

// newNodeCommand returns `shoal node`: drain and uncordon workload nodes.
func newNodeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Drain and uncordon nodes of workload clusters",
	}
	cmd.AddCommand(newNodeDrainCommand(true), newNodeDrainCommand(false))
	return cmd
}

func newNodeDrainCommand(drain bool) *cobra.Command {
	use, short, done := "drain CLUSTER/NODE", "Keep new members off a node and move the gangs on it elsewhere", "drained"
	long := "drain keeps new members off the node and moves every gang with a member on it like `shoal cluster " +
		"drain`: the whole gang is stopped with its preemption grace and requeued at once (reason Drained), " +
		"without using up failurePolicy.maxRestarts. `shoal node uncordon CLUSTER/NODE` ends it."
	if !drain {
		use, short, done, long = "uncordon CLUSTER/NODE", "Let new members onto a drained node again", "uncordoned", ""
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cluster, node, err := splitClusterNode(args[0])
			if err != nil {
				return err
			}
			cl, closeConn, err := clustersClient(cmd)
			if err != nil {
				return err
			}
			defer closeConn()
			obj, err := cl.DrainNode(cmd.Context(), &shoalv1.DrainNodeRequest{Cluster: cluster, Node: node, Drain: drain})
			if err != nil {
				return err
			}
			c, err := decodeCluster(obj)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "node/%s %s (cluster %s: %s)\n", args[0], done, c.Name, clusterState(c))
			return nil
		},
	}
}

// splitClusterNode parses CLUSTER/NODE.
func splitClusterNode(arg string) (cluster, node string, err error) {
	cluster, node, ok := strings.Cut(arg, "/")
	if !ok || cluster == "" || node == "" || strings.Contains(node, "/") {
		return "", "", fmt.Errorf("%q: want CLUSTER/NODE, e.g. h100-1/h100-1-n0003", arg)
	}
	return cluster, node, nil
}

// clusterState is the cluster's state for the list: a drained cluster is
// "Cordoned (drained)", a draining one says how much is left, drained nodes
// are counted.
func clusterState(c *v1alpha1.Cluster) string {
	s := outDash(string(c.Status.State))
	var notes []string
	if d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ClusterConditionDrained); d != nil && c.Spec.Drain {
		if d.Status == metav1.ConditionTrue {
			notes = append(notes, "drained")
		} else {
			notes = append(notes, "draining")
		}
	}
	if n := len(c.Spec.DrainedNodes); n > 0 {
		notes = append(notes, fmt.Sprintf("%d nodes drained", n))
	}
	if len(notes) == 0 {
		return s
	}
	return s + " (" + strings.Join(notes, ", ") + ")"
}
