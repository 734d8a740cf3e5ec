// SPDX-License-Identifier: Apache-2.0

package convert

import "fmt"

// jobSet converts a jobset.x-k8s.io/v1alpha2 JobSet: each replicated job
// becomes a role of the same name, in order, with replicas × parallelism
// members running its Job's pod template; failurePolicy.maxRestarts
// carries over.
func (c *converter) jobSet(src map[string]any) error {
	spec, err := c.obj(src, "spec", "spec")
	if err != nil {
		return err
	}
	if spec == nil {
		return fmt.Errorf("%w: spec is missing", ErrUnreadable)
	}
	if err := c.newJob(src, ""); err != nil {
		return err
	}
	if err := c.jobSetPolicies(spec); err != nil {
		return err
	}
	rjs, ok := spec["replicatedJobs"].([]any)
	if !ok || len(rjs) == 0 {
		return fmt.Errorf("%w: spec.replicatedJobs is missing or empty", ErrUnreadable)
	}
	for i, x := range rjs {
		p := fmt.Sprintf("spec.replicatedJobs[%d]", i)
		rj, ok := x.(map[string]any)
		if !ok {
			return fmt.Errorf("%w: %s is a %T, not an object", ErrUnreadable, p, x)
		}
		if err := c.replicatedJob(rj, p); err != nil {
			return err
		}
	}
	delete(spec, "replicatedJobs")
	c.leftovers("spec", spec)
	delete(src, "spec")
	c.drop(src, "status", "status", "the source's status is not carried")
	return nil
}

// jobSetPolicies reads the JobSet's failure policy and reports what Shoal
// does itself (network, success policy, startup order).
func (c *converter) jobSetPolicies(spec map[string]any) error {
	c.drop(spec, "network", "spec.network",
		"Shoal gives every gang its own headless Service and host names <job>-<index> (docs/api.md)")
	c.drop(spec, "successPolicy", "spec.successPolicy", "a Shoal job succeeds when every member succeeds")
	c.drop(spec, "startupPolicy", "spec.startupPolicy", "a Shoal gang starts all at once, after every member is prepared")
	c.drop(spec, "suspend", "spec.suspend", "Shoal jobs cannot be suspended")
	c.drop(spec, "managedBy", "spec.managedBy", "the Shoal hub manages the job")
	c.drop(spec, "coordinator", "spec.coordinator", "member 0 (the first member of the first role) is the coordinator")
	c.drop(spec, "ttlSecondsAfterFinished", "spec.ttlSecondsAfterFinished", "Shoal keeps finished jobs until they are deleted")
	fp, err := c.obj(spec, "failurePolicy", "spec.failurePolicy")
	if err != nil || fp == nil {
		return err
	}
	if _, ok := fp["maxRestarts"]; ok {
		n, err := c.int32(fp, "maxRestarts", "spec.failurePolicy.maxRestarts", 0)
		if err != nil {
			return err
		}
		c.job.Spec.FailurePolicy.MaxRestarts = &n
	}
	c.drop(fp, "rules", "spec.failurePolicy.rules", "Shoal restarts the whole gang on any member failure")
	c.drop(fp, "restartStrategy", "spec.failurePolicy.restartStrategy", "Shoal restarts the whole gang at once")
	c.leftovers("spec.failurePolicy", fp)
	delete(spec, "failurePolicy")
	return nil
}

// replicatedJob makes one role of a replicated job.
func (c *converter) replicatedJob(rj map[string]any, p string) error {
	name, ok := c.str(rj, "name", p+".name")
	if !ok {
		return fmt.Errorf("%w: %s.name is missing", ErrUnreadable, p)
	}
	replicas, err := c.int32(rj, "replicas", p+".replicas", 1)
	if err != nil {
		return err
	}
	c.drop(rj, "dependsOn", p+".dependsOn", "the roles of a Shoal gang start together")
	tmpl, err := c.obj(rj, "template", p+".template")
	if err != nil {
		return err
	}
	if tmpl == nil {
		return fmt.Errorf("%w: %s.template is missing", ErrUnreadable, p)
	}
	tp := p + ".template"
	if md, err := c.obj(tmpl, "metadata", tp+".metadata"); err != nil {
		return err
	} else if len(md) > 0 {
		c.dropped[tp+".metadata"] = "the Job template's metadata is not carried (the pod template's is)"
	}
	delete(tmpl, "metadata")
	js, err := c.obj(tmpl, "spec", tp+".spec")
	if err != nil {
		return err
	}
	if js == nil {
		return fmt.Errorf("%w: %s.spec is missing", ErrUnreadable, tp)
	}
	sp := tp + ".spec"
	par, err := c.int32(js, "parallelism", sp+".parallelism", 1)
	if err != nil {
		return err
	}
	if _, ok := js["completions"]; ok {
		n, err := c.int32(js, "completions", sp+".completions", par)
		if err != nil {
			return err
		}
		if n != par {
			c.dropped[sp+".completions"] = fmt.Sprintf(
				"%d completions of %d pods: every member of a Shoal gang runs once, in parallel", n, par)
		}
	}
	c.drop(js, "completionMode", sp+".completionMode", "members are indexed by SHOAL_ROLE_INDEX and SHOAL_MEMBER_INDEX")
	c.drop(js, "backoffLimit", sp+".backoffLimit", "Shoal restarts the whole gang (spec.failurePolicy.maxRestarts)")
	c.drop(js, "backoffLimitPerIndex", sp+".backoffLimitPerIndex", "Shoal restarts the whole gang")
	c.drop(js, "podFailurePolicy", sp+".podFailurePolicy", "any member failure restarts the whole gang")
	c.drop(js, "activeDeadlineSeconds", sp+".activeDeadlineSeconds",
		"set the pod template's activeDeadlineSeconds for a per-member deadline")
	c.drop(js, "ttlSecondsAfterFinished", sp+".ttlSecondsAfterFinished", "Shoal keeps finished jobs until they are deleted")
	r, err := c.role(name, replicas*par, js, "template", sp+".template")
	if err != nil {
		return err
	}
	c.job.Spec.Roles = append(c.job.Spec.Roles, r)
	c.leftovers(sp, js)
	delete(tmpl, "spec")
	c.leftovers(tp, tmpl)
	delete(rj, "template")
	c.leftovers(p, rj)
	return nil
}
