// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

func newDevNodesCommand(dir *string) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "nodes CLUSTER",
		Short: "List a workload cluster's GPU nodes: product, GPUs, MIG slices, rack, block, clique",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := devOpenCluster(*dir, args[0])
			if err != nil {
				return err
			}
			cs, err := c.Clientset()
			if err != nil {
				return err
			}
			list, err := cs.CoreV1().Nodes().List(cmd.Context(), metav1.ListOptions{})
			if err != nil {
				return err
			}
			sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NODE\tREADY\tPRODUCT\tGPUS\tMIG\tRACK\tBLOCK\tCLIQUE")
			for i := range list.Items {
				if limit > 0 && i == limit {
					fmt.Fprintf(w, "... %d more\n", len(list.Items)-limit)
					break
				}
				n := &list.Items[i]
				l := n.Labels
				fmt.Fprintf(w, "%s\t%v\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, devNodeReady(n), l[devfleet.LabelGPUProduct],
					n.Status.Allocatable.Name(devfleet.ResourceGPU, "").String(), devMigSlices(n), l[devfleet.LabelRack],
					l[devfleet.LabelBlock], devOrDash(l[devfleet.LabelGPUClique]))
			}
			return w.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "show at most this many nodes (0: all)")
	return cmd
}

// devQueue is the queue a pod `shoal dev pod --node` binds to a virtual
// node stands in for: its agent runs it in that queue's local namespace.
const devQueue = "dev"

func newDevPodCommand(dir *string) *cobra.Command {
	var (
		res     string
		count   int64
		timeout time.Duration
		node    string
	)
	cmd := &cobra.Command{
		Use: "pod CLUSTER NAME",
		Short: "Create a pod asking for GPUs (or MIG slices) in a cluster and wait until it runs " +
			"(on the hub cluster: bound with --node to a virtual node)",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := devOpenCluster(*dir, args[0])
			if err != nil {
				return err
			}
			cs, err := c.Clientset()
			if err != nil {
				return err
			}
			ns := "default"
			if node != "" { // its agent watches only its cluster's namespace
				if ns, err = devfleet.VirtualNodeNamespace(cmd.Context(), cs, node); err != nil {
					return err
				}
			}
			pod := devfleet.GPUPod(ns, args[1], res, count)
			if node != "" {
				pod.Spec.NodeName = node
				pod.Spec.Tolerations = []corev1.Toleration{{Key: v1alpha1.TaintVirtual, Operator: corev1.TolerationOpExists}}
				// Stands in for a member Shoal placed: the agent's kubelet
				// endpoint serves (logs, exec) only pods labelled with a job.
				pod.Labels = map[string]string{v1alpha1.LabelJob: pod.Name}
				// Its agent runs it in the namespace of its queue, and refuses a
				// pod that names none.
				pod.Annotations = map[string]string{v1alpha1.AnnotationQueue: devQueue}
			}
			if _, err := cs.CoreV1().Pods(ns).Create(cmd.Context(), pod, metav1.CreateOptions{}); err != nil {
				return err
			}
			start := time.Now()
			got, err := devfleet.WaitPodRunning(cmd.Context(), cs, ns, pod.Name, timeout)
			if err != nil {
				return err
			}
			node, err := cs.CoreV1().Nodes().Get(cmd.Context(), got.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			where := node.Labels[devfleet.LabelGPUProduct]
			if r := node.Labels[devfleet.LabelRack]; r != "" {
				where += ", rack " + r
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pod %s/%s (%d x %s) %s on %s (%s) after %s\n", c.Name, pod.Name,
				count, res, got.Status.Phase, node.Name, where, time.Since(start).Round(time.Millisecond))
			if wl := node.Labels[v1alpha1.LabelCluster]; wl != "" {
				return devPrintLocalPod(cmd, *dir, wl, got)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "bind the pod to this node (e.g. a virtual node on the hub cluster) instead of scheduling it")
	cmd.Flags().StringVar(&res, "resource", devfleet.ResourceGPU, "extended resource to ask for, e.g. "+devfleet.ResourceMIG1g10gb)
	cmd.Flags().Int64Var(&count, "count", 1, "how many")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long to wait for Running")
	return cmd
}

func devOpenCluster(dir, name string) (*devfleet.Cluster, error) {
	f, err := devfleet.Open(dir)
	if err != nil {
		return nil, err
	}
	c := f.Cluster(name)
	if c == nil {
		return nil, fmt.Errorf("no cluster %q in the fleet (have: %s)", name, devClusterNames(f))
	}
	return c, nil
}

func devMigSlices(n *corev1.Node) string {
	var parts []string
	for name, q := range n.Status.Allocatable {
		if p, ok := strings.CutPrefix(string(name), "nvidia.com/mig-"); ok {
			parts = append(parts, fmt.Sprintf("%s x %s", q.String(), p))
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// devPrintLocalPod prints where the workload cluster runs the local twin of a
// pod bound to one of its agent's virtual nodes on the hub.
func devPrintLocalPod(cmd *cobra.Command, dir, cluster string, hubPod *corev1.Pod) error {
	c, err := devOpenCluster(dir, cluster)
	if err != nil {
		return err
	}
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	ns, ok := v1alpha1.LocalNamespaceOf(hubPod.Annotations)
	if !ok {
		return fmt.Errorf("pod %s/%s names no queue: it has no twin in workload cluster %s", hubPod.Namespace, hubPod.Name, cluster)
	}
	local, err := devfleet.WaitPodRunning(cmd.Context(), cs, ns, hubPod.Name, 30*time.Second)
	if err != nil {
		return fmt.Errorf("the pod's twin in workload cluster %s: %w", cluster, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "  runs in workload cluster %s as %s/%s, %s on node %s\n",
		cluster, local.Namespace, local.Name, local.Status.Phase, local.Spec.NodeName)
	return nil
}
