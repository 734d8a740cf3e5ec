// SPDX-License-Identifier: Apache-2.0

package convert

import (
	"fmt"
	"sort"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// pytorchJob converts a kubeflow.org/v1 PyTorchJob: Master (first) and
// Worker replica specs become the roles master and worker, in that order,
// so member 0 (MASTER_ADDR) is the master.
func (c *converter) pytorchJob(src map[string]any) error {
	spec, err := c.obj(src, "spec", "spec")
	if err != nil {
		return err
	}
	if spec == nil {
		return fmt.Errorf("%w: spec is missing", ErrUnreadable)
	}
	queue, prio, maxRestarts, err := c.runPolicy(spec)
	if err != nil {
		return err
	}
	if err := c.newJob(src, queue); err != nil {
		return err
	}
	c.job.Spec.PriorityClass, c.job.Spec.FailurePolicy.MaxRestarts = prio, maxRestarts
	c.drop(spec, "elasticPolicy", "spec.elasticPolicy", "Shoal gangs are not elastic: the member count is fixed")
	c.drop(spec, "nprocPerNode", "spec.nprocPerNode",
		"Shoal starts one container process per member; pass --nproc-per-node to torchrun in the command")
	reps, err := c.obj(spec, "pytorchReplicaSpecs", "spec.pytorchReplicaSpecs")
	if err != nil {
		return err
	}
	if len(reps) == 0 {
		return fmt.Errorf("%w: spec.pytorchReplicaSpecs is empty", ErrUnreadable)
	}
	types := make([]string, 0, len(reps))
	for t := range reps {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool { // Master first, then Worker, then the rest by name
		rank := func(t string) int {
			if r, ok := map[string]int{"Master": 0, "Worker": 1}[t]; ok {
				return r
			}
			return 2
		}
		if rank(types[i]) != rank(types[j]) {
			return rank(types[i]) < rank(types[j])
		}
		return types[i] < types[j]
	})
	for _, t := range types {
		p := "spec.pytorchReplicaSpecs." + t
		rs, err := c.obj(reps, t, p)
		if err != nil {
			return err
		}
		if rs == nil {
			return fmt.Errorf("%w: %s is empty", ErrUnreadable, p)
		}
		n, err := c.int32(rs, "replicas", p+".replicas", 1)
		if err != nil {
			return err
		}
		c.drop(rs, "restartPolicy", p+".restartPolicy",
			"Shoal restarts the whole gang on a member failure (spec.failurePolicy); "+
				"member pods keep their template's restartPolicy (default Never)")
		r, err := c.role(t, n, rs, "template", p+".template")
		if err != nil {
			return err
		}
		c.job.Spec.Roles = append(c.job.Spec.Roles, r)
		c.leftovers(p, rs)
		delete(reps, t)
	}
	delete(spec, "pytorchReplicaSpecs")
	c.leftovers("spec", spec)
	delete(src, "spec")
	c.drop(src, "status", "status", "the source's status is not carried")
	return nil
}

// runPolicy reads spec.runPolicy: the scheduling queue and priority class,
// backoffLimit as maxRestarts; the rest is reported.
func (c *converter) runPolicy(spec map[string]any) (queue string, prio v1alpha1.PriorityClass, maxRestarts *int32, err error) {
	rp, err := c.obj(spec, "runPolicy", "spec.runPolicy")
	if err != nil || rp == nil {
		return "", "", nil, err
	}
	const p = "spec.runPolicy"
	c.drop(rp, "cleanPodPolicy", p+".cleanPodPolicy", "Shoal deletes every member pod when the job ends")
	c.drop(rp, "ttlSecondsAfterFinished", p+".ttlSecondsAfterFinished", "Shoal keeps finished jobs until they are deleted")
	c.drop(rp, "activeDeadlineSeconds", p+".activeDeadlineSeconds",
		"a Shoal job has no job-wide deadline; set the templates' activeDeadlineSeconds for a per-member one")
	c.drop(rp, "suspend", p+".suspend", "Shoal jobs cannot be suspended")
	c.drop(rp, "managedBy", p+".managedBy", "the Shoal hub manages the job")
	if _, ok := rp["backoffLimit"]; ok {
		n, err := c.int32(rp, "backoffLimit", p+".backoffLimit", 0)
		if err != nil {
			return "", "", nil, err
		}
		maxRestarts = &n
		c.notes = append(c.notes, fmt.Sprintf("spec.failurePolicy.maxRestarts: %d, from %s.backoffLimit "+
			"(Shoal counts whole-gang restarts, not pod retries)", n, p))
	}
	sp, err := c.obj(rp, "schedulingPolicy", p+".schedulingPolicy")
	if err != nil {
		return "", "", nil, err
	}
	if sp != nil {
		const sp0 = p + ".schedulingPolicy"
		queue, _ = c.str(sp, "queue", sp0+".queue")
		if pc, ok := c.str(sp, "priorityClass", sp0+".priorityClass"); ok {
			if _, known := v1alpha1.PriorityClass(pc).Value(); known {
				prio = v1alpha1.PriorityClass(pc)
			} else {
				c.dropped[sp0+".priorityClass"] = fmt.Sprintf("%q is not a Shoal priority class (%v)", pc, v1alpha1.PriorityClasses())
			}
		}
		c.drop(sp, "minAvailable", sp0+".minAvailable", "a Shoal gang is all or none: every member is required")
		c.leftovers(sp0, sp)
		delete(rp, "schedulingPolicy")
	}
	c.leftovers(p, rp)
	delete(spec, "runPolicy")
	return queue, prio, maxRestarts, nil
}
