// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func newQueueUpdateCommand() *cobra.Command {
	var f queueFlags
	cmd := &cobra.Command{
		Use:   "update NAME [flags] | -f FILE",
		Short: "Change a queue's weight, GPU quotas, pod security or pools (flags change only what they name; -f replaces the spec)",
		Example: "  shoal queue update research/nlp --weight 3 --gpu-quota h100=96 --borrowing-limit h100=0\n" +
			"  shoal queue update research/train --pool training-h100 --pool eu-spot\n" +
			"  shoal queue update -f examples/queues.yaml",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, done, err := queuesClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			var queues []*v1alpha1.Queue
			var revs []int64
			if f.file != "" {
				if queues, err = f.build(cmd, args); err != nil {
					return err
				}
				revs = make([]int64, len(queues)) // 0: replace whatever is stored
			} else {
				q, rev, err := mergeQueueFlags(cmd, cl, &f, args)
				if err != nil {
					return err
				}
				queues, revs = []*v1alpha1.Queue{q}, []int64{rev}
			}
			for i, q := range queues {
				b, err := json.Marshal(q)
				if err != nil {
					return err
				}
				_, err = cl.Update(cmd.Context(), &shoalv1.UpdateQueueRequest{Queue: &shoalv1.Object{Json: b, Revision: revs[i]}})
				if err != nil {
					return outCallError("update queue/"+q.Name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "queue/%s updated\n", q.Name)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "filename", "f", "", "file with the queue(s), - for stdin")
	fl.StringToStringVar(&f.quota, "gpu-quota", nil, "set nominal GPUs of these GPU classes, e.g. h100=64")
	fl.StringToStringVar(&f.borrowing, "borrowing-limit", nil, "set borrowing limits of these GPU classes, e.g. h100=16")
	fl.Int32Var(&f.weight, "weight", 0, "set the fair-share weight")
	podSecurityFlag(cmd, &f, "set")
	poolFlag(cmd, &f, "set (replacing; --pool= unbinds)")
	cmd.ValidArgsFunction = completeQueueNames
	return cmd
}

// mergeQueueFlags reads the queue and applies the flags to it; it returns
// the queue and the revision read, which guards the update.
func mergeQueueFlags(cmd *cobra.Command, cl shoalv1.QueuesClient, f *queueFlags, args []string) (*v1alpha1.Queue, int64, error) {
	if len(args) != 1 {
		return nil, 0, fmt.Errorf("name the queue or give -f FILE")
	}
	pools := cmd.Flags().Changed("pool")
	if len(f.quota) == 0 && len(f.borrowing) == 0 && f.weight == 0 && f.podSecurity == "" && !pools {
		return nil, 0, fmt.Errorf("nothing to change: give --weight, --gpu-quota, --borrowing-limit, --pod-security or --pool")
	}
	obj, err := cl.Get(cmd.Context(), &shoalv1.GetQueueRequest{Name: args[0]})
	if err != nil {
		return nil, 0, outCallError("get queue/"+args[0], err)
	}
	q, err := decodeQueueObject(obj)
	if err != nil {
		return nil, 0, err
	}
	if f.weight != 0 {
		q.Spec.Weight = &f.weight
	}
	if f.podSecurity != "" {
		q.Spec.PodSecurity = v1alpha1.PodSecurityLevel(f.podSecurity)
	}
	if pools {
		q.Spec.Pools = f.pools // empty (--pool=): unbound
	}
	if q.Spec.Quotas == nil {
		q.Spec.Quotas = map[string]v1alpha1.GPUQuota{}
	}
	nominal, err := quotasFromFlags(f.quota, nil)
	if err != nil {
		return nil, 0, err
	}
	for class, n := range nominal {
		cur := q.Spec.Quotas[class]
		cur.Nominal = n.Nominal
		q.Spec.Quotas[class] = cur
	}
	existing := map[string]string{}
	for class, quota := range q.Spec.Quotas {
		existing[class] = fmt.Sprint(quota.Nominal)
	}
	withLimits, err := quotasFromFlags(existing, f.borrowing)
	if err != nil {
		return nil, 0, err
	}
	for class := range f.borrowing {
		cur := q.Spec.Quotas[class]
		cur.BorrowingLimit = withLimits[class].BorrowingLimit
		q.Spec.Quotas[class] = cur
	}
	q.Status = v1alpha1.QueueStatus{}
	return q, obj.Revision, nil
}
