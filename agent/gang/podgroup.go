// SPDX-License-Identifier: Apache-2.0

package gang

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// sliceGroup returns the PodGroup a member's local pod joins and the
// slice's size, where the workload cluster serves PodGroups and the hub
// pod says how many members of its epoch are in this cluster; ok is false
// otherwise (the slice starts through the gate alone, as before).
func (g *Gate) sliceGroup(hub *corev1.Pod, epoch int64) (name string, size int32, ok bool) {
	if !g.cache.ServesPodGroups() {
		return "", 0, false
	}
	n, err := strconv.ParseInt(hub.Annotations[v1alpha1.AnnotationSliceSize], 10, 32)
	if err != nil || n < 1 {
		return "", 0, false
	}
	return v1alpha1.SlicePodGroupName(hub.Labels[v1alpha1.LabelJob], epoch), int32(n), true
}

// ensurePodGroup makes the slice's PodGroup exist before the first of its
// members is committed: gang policy with minCount the slice's size, so
// that the cluster's kube-scheduler binds the slice's pods all or none.
// The group is owned by the slice's local pods the cache holds (all of
// them are prepared, so created, before any commit), so it goes with the
// last of them.
func (g *Gate) ensurePodGroup(ctx context.Context, ns, name string, size int32, job string, epoch int64) error {
	groups := g.local.SchedulingV1beta1().PodGroups(ns)
	if _, err := groups.Get(ctx, name, metav1.GetOptions{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get PodGroup %s/%s: %w", ns, name, err)
	}
	pods, err := g.cache.PodsOfJob(ns, job)
	if err != nil {
		return err
	}
	var owners []metav1.OwnerReference
	var targets []string
	for _, p := range pods {
		if p.Annotations[v1alpha1.AnnotationEpoch] == strconv.FormatInt(epoch, 10) && p.DeletionTimestamp == nil {
			owners = append(owners, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID})
			targets = append(targets, p.Annotations[v1alpha1.AnnotationTargetNode])
		}
	}
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: owners,
			Labels: map[string]string{v1alpha1.LabelManaged: "true", v1alpha1.LabelJob: job,
				v1alpha1.LabelEpoch: strconv.FormatInt(epoch, 10)}},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: size}}},
	}
	key := ""
	if !g.noGroupTopology.Load() {
		key = g.sliceTopologyKey(targets)
	}
	if key != "" {
		pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{
			Topology: []schedulingv1beta1.TopologyConstraint{{Key: key}}}
	}
	created, err := groups.Create(ctx, pg, metav1.CreateOptions{})
	if key != "" && apierrors.IsInvalid(err) {
		// The cluster serves PodGroups without TopologyAwareWorkloadScheduling
		// (alpha in v1.37): the field is forbidden there. Its pods are pinned
		// to the planned nodes anyway; create the group without it, and do
		// not try again in this cluster.
		klog.FromContext(ctx).Info("PodGroup topology constraints refused; creating slice groups without them",
			"podGroup", klog.KRef(ns, name), "key", key, "err", err)
		g.noGroupTopology.Store(true)
		pg.Spec.SchedulingConstraints, key = nil, ""
		created, err = groups.Create(ctx, pg, metav1.CreateOptions{})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PodGroup %s/%s: %w", ns, name, err)
	}
	if err == nil {
		if key != "" && created.Spec.SchedulingConstraints == nil {
			key = "" // dropped by a server with the feature off
		}
		klog.FromContext(ctx).V(2).Info("Gang slice PodGroup created", "podGroup", klog.KRef(ns, name), "minCount", size,
			"owners", len(owners), "topologyKey", key)
	}
	return nil
}

// sliceTopologyKey returns the node label key of the tightest topology
// level (NVLink domain, rack, block, zone, in the agent's topology map)
// whose value all the slice's target nodes share, or "" when they share
// none, a node is unknown, or the Gate has no topology map. It becomes the
// PodGroup's topology constraint: the slice as the hub placed it, stated
// to the member cluster's scheduler.
func (g *Gate) sliceTopologyKey(targets []string) string {
	if g.topology == nil || len(targets) == 0 {
		return ""
	}
	keys, ok := g.topology()
	if !ok {
		return ""
	}
	var nodes []*corev1.Node
	for _, t := range targets {
		n, err := g.cache.Nodes().Get(t)
		if t == "" || err != nil {
			return ""
		}
		nodes = append(nodes, n)
	}
	for _, key := range []string{keys.NVLink, keys.Rack, keys.Block, keys.Zone} {
		if key == "" {
			continue
		}
		v := nodes[0].Labels[key]
		same := v != ""
		for _, n := range nodes[1:] {
			same = same && n.Labels[key] == v
		}
		if same {
			return key
		}
	}
	return ""
}

// joinGroup makes the local pod a member of the slice's PodGroup.
func joinGroup(local *corev1.Pod, name string) {
	local.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(name)}
}
