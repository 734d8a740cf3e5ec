// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// addQueueCommands adds `shoal queue` to root.
func addQueueCommands(root *cobra.Command) {
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "Manage the hierarchical queues (org/team/project): GPU quotas and fair-share weights",
	}
	cmd.AddCommand(newQueueCreateCommand(), newQueueUpdateCommand(), withQueueCompletion(newQueueGetCommand()),
		newQueueListCommand(), withQueueCompletion(newQueueDeleteCommand()))
	root.AddCommand(cmd)
}

// queuesClient dials the hub and returns a Queues client and the connection's closer.
func queuesClient(cmd *cobra.Command) (shoalv1.QueuesClient, func(), error) {
	conn, err := dialHub(cmd)
	if err != nil {
		return nil, nil, err
	}
	return shoalv1.NewQueuesClient(conn), func() { _ = conn.Close() }, nil
}

// queueFlags are the flags that build a Queue on the command line.
type queueFlags struct {
	file      string
	quota     map[string]string
	borrowing map[string]string
	weight    int32
	// podSecurity is --pod-security: restricted, baseline or privileged.
	podSecurity string
	// pools is --pool: the GPU pools the queue is bound to.
	pools []string
}

// poolFlag adds --pool to a queue command.
func poolFlag(cmd *cobra.Command, f *queueFlags, what string) {
	cmd.Flags().StringSliceVar(&f.pools, "pool", nil, what+" the GPU pools the queue is bound to (repeatable): its jobs, "+
		"and its descendants' unless they name their own, run only on the pools' nodes (unset: the parent's, or anywhere)")
	_ = cmd.RegisterFlagCompletionFunc("pool", completePoolNames(poolsClient, true))
}

// podSecurityFlag adds --pod-security to a queue command.
func podSecurityFlag(cmd *cobra.Command, f *queueFlags, what string) {
	cmd.Flags().StringVar(&f.podSecurity, "pod-security", "", what+" the Pod Security Standards level of the queue's members "+
		"(restricted, baseline or privileged; unset inherits the parent's, baseline at the top; "+
		"a queue is never more permissive than its parent)")
}

func newQueueCreateCommand() *cobra.Command {
	var f queueFlags
	var output string
	cmd := &cobra.Command{
		Use:   "create NAME | -f FILE",
		Short: "Create a queue (missing parent queues are created with weight 1 and no quota)",
		Example: "  shoal queue create research/nlp --gpu-quota h100=64 --borrowing-limit h100=16 --weight 2\n" +
			"  shoal queue create research/train --pool training-h100\n" +
			"  shoal queue create -f examples/queue.yaml",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			queues, err := f.build(cmd, args)
			if err != nil {
				return err
			}
			cl, done, err := queuesClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			for _, q := range queues {
				b, err := json.Marshal(q)
				if err != nil {
					return err
				}
				obj, err := cl.Create(cmd.Context(), &shoalv1.CreateQueueRequest{Queue: &shoalv1.Object{Json: b}})
				if err != nil {
					return outCallError("create queue/"+q.Name, err)
				}
				if ok, err := outStructured(cmd.OutOrStdout(), output, jsonObject(obj.Json)); ok {
					if err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "queue/%s created\n", q.Name)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "filename", "f", "", "file with the queue(s), - for stdin")
	fl.StringToStringVar(&f.quota, "gpu-quota", nil, "nominal GPUs per GPU class, e.g. h100=64,a100=16")
	fl.StringToStringVar(&f.borrowing, "borrowing-limit", nil, "GPUs a class may borrow beyond its quota, e.g. h100=16 (default: no limit)")
	fl.Int32Var(&f.weight, "weight", 0, "fair-share weight relative to sibling queues (default 1)")
	podSecurityFlag(cmd, &f, "set")
	poolFlag(cmd, &f, "set")
	outFlag(cmd, &output)
	return cmd
}

// build returns the queues of -f, or the one named on the command line.
func (f *queueFlags) build(cmd *cobra.Command, args []string) ([]*v1alpha1.Queue, error) {
	if f.file != "" {
		if len(args) > 0 || len(f.quota) > 0 || len(f.borrowing) > 0 || f.weight != 0 || f.podSecurity != "" || len(f.pools) > 0 {
			return nil, fmt.Errorf("give either -f FILE or NAME with flags, not both")
		}
		return readQueues(cmd, f.file)
	}
	if len(args) != 1 {
		return nil, fmt.Errorf("name the queue (org/team/project) or give -f FILE")
	}
	q := &v1alpha1.Queue{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindQueue},
		ObjectMeta: metav1.ObjectMeta{Name: args[0]}}
	if f.weight != 0 {
		q.Spec.Weight = &f.weight
	}
	q.Spec.PodSecurity = v1alpha1.PodSecurityLevel(f.podSecurity)
	q.Spec.Pools = f.pools
	var err error
	q.Spec.Quotas, err = quotasFromFlags(f.quota, f.borrowing)
	return []*v1alpha1.Queue{q}, err
}

// quotasFromFlags combines --gpu-quota and --borrowing-limit.
func quotasFromFlags(nominal, borrowing map[string]string) (map[string]v1alpha1.GPUQuota, error) {
	if len(nominal) == 0 && len(borrowing) == 0 {
		return nil, nil
	}
	out := map[string]v1alpha1.GPUQuota{}
	for class, v := range nominal {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--gpu-quota %s=%s: the quota must be a whole number of GPUs", class, v)
		}
		out[class] = v1alpha1.GPUQuota{Nominal: int32(n)}
	}
	for class, v := range borrowing {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--borrowing-limit %s=%s: the limit must be a whole number of GPUs", class, v)
		}
		q, ok := out[class]
		if !ok {
			return nil, fmt.Errorf("--borrowing-limit %s: give %s a quota with --gpu-quota %s=N first", class, class, class)
		}
		b := int32(n)
		q.BorrowingLimit = &b
		out[class] = q
	}
	return out, nil
}

// readQueues decodes every document of file strictly; all must be Queues.
func readQueues(cmd *cobra.Command, file string) ([]*v1alpha1.Queue, error) {
	r, closeFn, err := readInput(cmd, file)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	objs, err := v1alpha1.DecodeAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []*v1alpha1.Queue
	for i, o := range objs {
		q, ok := o.(*v1alpha1.Queue)
		if !ok {
			return nil, fmt.Errorf("%s: document %d is a %T, not a Queue (jobs: shoal job submit -f)", file, i+1, o)
		}
		out = append(out, q)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no queue", file)
	}
	return out, nil
}

// jsonObject keeps an object's JSON as is for -o json|yaml.
func jsonObject(b []byte) any {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return string(b)
	}
	return v
}

func newQueueDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete queues; refused while a queue has child queues or unfinished jobs",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, done, err := queuesClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			for _, name := range args {
				if _, err := cl.Delete(cmd.Context(), &shoalv1.DeleteQueueRequest{Name: name}); err != nil {
					return outCallError("delete queue/"+name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "queue/%s deleted\n", name)
			}
			return nil
		},
	}
}

// queueQuotas renders quotas as "a100=16, h100=64+16".
func queueQuotas(q *v1alpha1.Queue) string {
	var parts []string
	for class, quota := range q.Spec.Quotas {
		s := fmt.Sprintf("%s=%d", class, quota.Nominal)
		if quota.BorrowingLimit != nil {
			s += fmt.Sprintf("+%d", *quota.BorrowingLimit)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "-"
	}
	sortStrings(parts)
	return strings.Join(parts, ",")
}
