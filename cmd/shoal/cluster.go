// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// newClusterCommand returns `shoal cluster`: workload clusters and join tokens.
func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Register, list, inspect, cordon, drain and remove workload clusters",
	}
	cmd.AddCommand(newClusterTokenCommand(), newClusterListCommand(), newClusterGetCommand(),
		newClusterCordonCommand(true), newClusterCordonCommand(false), newClusterDrainCommand(), newClusterRemoveCommand())
	return cmd
}

// clustersClient dials the hub and returns a Clusters client and a closer.
func clustersClient(cmd *cobra.Command) (shoalv1.ClustersClient, func(), error) {
	conn, err := dialHub(cmd)
	if err != nil {
		return nil, nil, err
	}
	return shoalv1.NewClustersClient(conn), func() { _ = conn.Close() }, nil
}

func decodeCluster(obj *shoalv1.Object) (*v1alpha1.Cluster, error) {
	var c v1alpha1.Cluster
	if err := json.Unmarshal(obj.GetJson(), &c); err != nil {
		return nil, fmt.Errorf("hub sent a cluster this CLI cannot read (version skew?): %w", err)
	}
	return &c, nil
}

// age renders how long ago t was, "-" for never.
func clusterAge(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(time.Since(*t)) + " ago"
}

// completeClusterNames completes a cluster name argument from the hub.
func completeClusterNames(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	cl, done, err := clustersClient(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer done()
	resp, err := cl.ListClusters(cmd.Context(), &shoalv1.ListClustersRequest{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, o := range resp.Items {
		if c, err := decodeCluster(o); err == nil {
			names = append(names, c.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

func newClusterCordonCommand(cordon bool) *cobra.Command {
	use, short, done := "cordon NAME", "Keep new gangs off a cluster", "cordoned"
	if !cordon {
		use, short, done = "uncordon NAME", "Let new gangs onto a cluster again (ends a drain)", "uncordoned"
	}
	return &cobra.Command{
		Use:               use,
		Short:             short,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, closeConn, err := clustersClient(cmd)
			if err != nil {
				return err
			}
			defer closeConn()
			obj, err := cl.CordonCluster(cmd.Context(), &shoalv1.CordonClusterRequest{Name: args[0], Cordon: cordon})
			if err != nil {
				return err
			}
			c, err := decodeCluster(obj)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s %s (state %s)\n", c.Name, done, c.Status.State)
			return nil
		},
	}
}

func newClusterRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a cluster: revoke its agent's certificate and hub-cluster credentials",
		Long: "remove deletes the cluster's record, revokes its agent certificate (refused from now on) and, " +
			"when the hub has a management cluster, the agent's credentials there. The cluster can register " +
			"again with a new join token.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, closeConn, err := clustersClient(cmd)
			if err != nil {
				return err
			}
			defer closeConn()
			if _, err := cl.RemoveCluster(cmd.Context(), &shoalv1.RemoveClusterRequest{Name: args[0]}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s removed; its agent certificate is revoked\n", args[0])
			return nil
		},
	}
}
