// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

func newDevLogsCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "logs CLUSTER JOB",
		Short: "Print the container logs of every member pod of JOB in a cluster of the fleet (on hub: read through the agents' virtual kubelets)",
		Long: "Print the container logs of every member pod of JOB in CLUSTER (on hub: the hub pods in the clusters' namespaces; elsewhere: the agent's members in the queue namespaces), each line prefixed " +
			"with the pod name, as `kubectl --context CLUSTER -n NAMESPACE logs -l " + v1alpha1.LabelJob + "=JOB` would in each of those namespaces.",
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
			// On the hub the members are the hub pods in the clusters'
			// namespaces (shoal-c-<cluster>); in a workload cluster, the
			// agent's managed copies in the queue namespaces.
			sel := v1alpha1.LabelJob + "=" + args[1]
			if c.Role != devfleet.RoleHub {
				sel += "," + v1alpha1.LabelManaged + "=true"
			}
			pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(cmd.Context(), metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return err
			}
			if c.Role == devfleet.RoleHub {
				pods.Items = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return !v1alpha1.IsClusterNamespace(p.Namespace) })
			}
			if len(pods.Items) == 0 {
				return fmt.Errorf("no member pods of job %s in cluster %s", args[1], args[0])
			}
			sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
			for _, p := range pods.Items {
				b, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(cmd.Context())
				if err != nil {
					return fmt.Errorf("logs of %s: %w", p.Name, err)
				}
				for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
					fmt.Fprintf(cmd.OutOrStdout(), "%s  %s\n", p.Name, l)
				}
			}
			return nil
		},
	}
}
