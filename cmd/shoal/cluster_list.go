// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
)

func newClusterListCommand() *cobra.Command {
	var output, selector string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List clusters: state, GPUs total/free by product, agent version, last heartbeat",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			cl, closeConn, err := clustersClient(cmd)
			if err != nil {
				return err
			}
			defer closeConn()
			clusters, err := listAllClusters(cmd.Context(), cl, selector)
			if err != nil {
				return err
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, clusterListObject(clusters)); ok {
				return err
			}
			invs := fetchInventories(cmd.Context(), cl, clusters)
			return printClusterTable(cmd.OutOrStdout(), clusters, invs, output == "wide")
		},
	}
	outFlag(cmd, &output)
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "label selector over cluster labels (region=eu,provider!=aws or region in (eu,us),!spot)")
	return cmd
}

// listAllClusters pages through ListClusters.
func listAllClusters(ctx context.Context, cl shoalv1.ClustersClient, selector string) ([]*v1alpha1.Cluster, error) {
	var out []*v1alpha1.Cluster
	opts := &shoalv1.ListOptions{Limit: 500}
	for {
		resp, err := cl.ListClusters(ctx, &shoalv1.ListClustersRequest{Options: opts, Selector: selector})
		if err != nil {
			return nil, err
		}
		for _, o := range resp.Items {
			c, err := decodeCluster(o)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		if resp.GetMeta().GetContinue() == "" {
			return out, nil
		}
		opts.Continue = resp.Meta.Continue
	}
}

func clusterListObject(items []*v1alpha1.Cluster) map[string]any {
	if items == nil {
		items = []*v1alpha1.Cluster{}
	}
	return map[string]any{"apiVersion": v1alpha1.APIVersion, "kind": "ClusterList", "items": items}
}

// maxInventoryBytes bounds one inventory the CLI accepts.
const maxInventoryBytes = 256 << 20

// fetchInventories gets the latest inventory of each cluster, 8 at a time;
// clusters without one are missing from the map.
func fetchInventories(ctx context.Context, cl shoalv1.ClustersClient, clusters []*v1alpha1.Cluster) map[string]*inventory.Cluster {
	var mu sync.Mutex
	out := map[string]*inventory.Cluster{}
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, c := range clusters {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			inv, err := getInventory(ctx, cl, c.Name)
			if err == nil && inv != nil {
				mu.Lock()
				out[c.Name] = inv
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// getInventory returns the cluster's inventory, nil when it has not reported.
func getInventory(ctx context.Context, cl shoalv1.ClustersClient, name string) (*inventory.Cluster, error) {
	// A 5,000-node inventory is about 1 MB of JSON; allow large ones.
	obj, err := cl.GetInventory(ctx, &shoalv1.GetClusterRequest{Name: name}, grpc.MaxCallRecvMsgSize(maxInventoryBytes))
	if status.Code(err) == codes.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var inv inventory.Cluster
	if err := json.Unmarshal(obj.Json, &inv); err != nil {
		return nil, fmt.Errorf("inventory of cluster %q: %w", name, err)
	}
	return &inv, nil
}

// gpusByProduct renders "H100 12/16, A100 0/8" (free/total whole GPUs per product).
func gpusByProduct(c *v1alpha1.Cluster, inv *inventory.Cluster) string {
	if inv == nil {
		if c.Status.Inventory == nil {
			return "-"
		}
		return fmt.Sprintf("%d/%d", c.Status.Inventory.FreeGPUs, c.Status.Inventory.GPUs)
	}
	type tally struct{ free, total int }
	by := map[string]*tally{}
	for i := range inv.Nodes {
		n := &inv.Nodes[i]
		total := max(n.CapacityGPUs, n.GPUs)
		if total == 0 {
			continue
		}
		p := n.Product
		if p == "" {
			p = "unknown"
		}
		if by[p] == nil {
			by[p] = &tally{}
		}
		by[p].total += total
		by[p].free += n.FreeGPUs()
	}
	if len(by) == 0 {
		return "0"
	}
	names := make([]string, 0, len(by))
	for p := range by {
		names = append(names, p)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, p := range names {
		parts[i] = fmt.Sprintf("%s %d/%d", p, by[p].free, by[p].total)
	}
	return strings.Join(parts, ", ")
}

func printClusterTable(w io.Writer, clusters []*v1alpha1.Cluster, invs map[string]*inventory.Cluster, wide bool) error {
	if len(clusters) == 0 {
		_, err := fmt.Fprintln(w, "No clusters registered. Create a join token with `shoal cluster token create`.")
		return err
	}
	tw := outTable(w)
	header := "NAME\tSTATE\tGPUS (FREE/TOTAL)\tAGENT\tLAST HEARTBEAT"
	if wide {
		header += "\tNODES\tUID\tLABELS"
	}
	fmt.Fprintln(tw, header)
	for _, c := range clusters {
		var hb = c.Status.LastHeartbeat
		var last = "-"
		if hb != nil {
			last = clusterAge(&hb.Time)
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", c.Name, clusterState(c), gpusByProduct(c, invs[c.Name]),
			outDash(c.Status.AgentVersion), last)
		if wide {
			nodes := "-"
			if c.Status.Inventory != nil {
				nodes = fmt.Sprint(c.Status.Inventory.Nodes)
			}
			row += fmt.Sprintf("\t%s\t%s\t%s", nodes, c.Spec.UID, clusterLabels(c.Labels))
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

func clusterLabels(l map[string]string) string {
	if len(l) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + l[k]
	}
	return strings.Join(keys, ",")
}
