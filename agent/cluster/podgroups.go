// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// servesPodGroups reports whether the cluster serves the native gang API
// (scheduling.k8s.io/v1beta1 podgroups, the GenericWorkload feature of
// Kubernetes v1.37).
func (c *Cache) servesPodGroups(ctx context.Context) (bool, error) {
	return c.serves(ctx, schedulingv1beta1.SchemeGroupVersion.String(), "podgroups")
}

// serves reports whether the cluster serves every one of the resources in
// group version gv; discovery errors other than NotFound are retried until
// ctx ends.
func (c *Cache) serves(ctx context.Context, gv string, resources ...string) (bool, error) {
	var served bool
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := c.client.Discovery().ServerResourcesForGroupVersion(gv)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Discovery failed, retrying", "groupVersion", gv, "err", err)
			return false, nil
		}
		have := map[string]bool{}
		for _, r := range list.APIResources {
			have[r.Name] = true
		}
		served = true
		for _, r := range resources {
			served = served && have[r]
		}
		return true, nil
	})
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", gv, err)
	}
	return served, nil
}

// ServesPodGroups reports, once Synced is closed, whether the cluster
// serves PodGroups (scheduling.k8s.io/v1beta1): its kube-scheduler then
// admits each gang slice all or nothing (agent/gang, docs/native-gang.md).
func (c *Cache) ServesPodGroups() bool {
	select {
	case <-c.synced:
		return c.podGroupsServed
	default:
		return false
	}
}

// servesComputeDomains reports whether the cluster serves NVIDIA's
// ComputeDomains (computedomains in resource.nvidia.com/v1beta1, the
// custom resource of the compute-domain part of k8s-dra-driver-gpu).
func (c *Cache) servesComputeDomains(ctx context.Context) (bool, error) {
	return c.serves(ctx, fedinv.ComputeDomainGroup+"/"+fedinv.ComputeDomainVersion, fedinv.ComputeDomainResource)
}

// ServesComputeDomains reports, once Synced is closed, whether the cluster
// serves ComputeDomains: the agent then reports it in the inventory and
// makes one per NVLink clique of a compute-domain gang's slice (agent/gang,
// docs/compute-domains.md).
func (c *Cache) ServesComputeDomains() bool {
	select {
	case <-c.synced:
		return c.computeDomainsServed
	default:
		return false
	}
}
