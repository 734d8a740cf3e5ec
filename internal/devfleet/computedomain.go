// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// The compute-domain part of the fleet's driver simulator, for profiles
// with ComputeDomains (docs/compute-domains.md): it installs what NVIDIA's
// k8s-dra-driver-gpu installs for ComputeDomains — the CRD, the channel
// DeviceClass, a ResourceSlice of channels per node — and runs a small
// controller in the process that brought the fleet up: for every
// ComputeDomain it creates the channel ResourceClaimTemplate, and it sets
// the domain Ready once channel claims from that template are allocated on
// numNodes distinct nodes (where the real driver's IMEX daemons would
// start, after the members bind).

var (
	crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	cdResource  = schema.GroupVersionResource{Group: fedinv.ComputeDomainGroup, Version: fedinv.ComputeDomainVersion,
		Resource: fedinv.ComputeDomainResource}
)

// cdAttrType is the attribute telling a channel device from a daemon one.
const cdAttrType = "type"

// computeDomainCRD is the CustomResourceDefinition computedomains.resource.nvidia.com:
// namespaced, v1beta1 served and stored, a status subresource; the schema
// keeps unknown fields (the simulator checks what it reads).
func computeDomainCRD() *unstructured.Unstructured {
	open := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": fedinv.ComputeDomainResource + "." + fedinv.ComputeDomainGroup},
		"spec": map[string]any{
			"group": fedinv.ComputeDomainGroup, "scope": "Namespaced",
			"names": map[string]any{"plural": fedinv.ComputeDomainResource, "singular": "computedomain",
				"kind": fedinv.ComputeDomainKind, "listKind": fedinv.ComputeDomainKind + "List"},
			"versions": []any{map[string]any{
				"name": fedinv.ComputeDomainVersion, "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
					"spec": open, "status": open}}},
			}},
		},
	}}
}

// ComputeDomainChannelClass is the DeviceClass of the domains' channels.
func ComputeDomainChannelClass() *resourcev1.DeviceClass {
	sel := `device.driver == '` + fedinv.ComputeDomainDriver + `' && device.attributes['` + fedinv.ComputeDomainDriver +
		`'].` + cdAttrType + ` == 'channel'`
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: fedinv.ComputeDomainChannelClass},
		Spec:       resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: sel}}}},
	}
}

// channelSlice is a node's ResourceSlice of IMEX channels: one per GPU,
// so that every member on the node can get one.
func channelSlice(n *corev1.Node, channels int) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name + "-" + fedinv.ComputeDomainDriver},
		Spec: resourcev1.ResourceSliceSpec{Driver: fedinv.ComputeDomainDriver, NodeName: ptr.To(n.Name),
			Pool: resourcev1.ResourcePool{Name: n.Name, Generation: 1, ResourceSliceCount: 1}},
	}
	for i := range channels {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("channel-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				cdAttrType: {StringValue: ptr.To("channel")}, "id": {IntValue: ptr.To(int64(i))}}})
	}
	return s
}

// InstallComputeDomains installs the CRD (and waits until it is served),
// the channel DeviceClass and every node's channel slice.
func InstallComputeDomains(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, nodes []*corev1.Node, channels int) error {
	if _, err := dyn.Resource(crdResource).Create(ctx, computeDomainCRD(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create CRD: %w", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(cdResource).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("ComputeDomain CRD not served: %w", err)
	}
	if _, err := cs.ResourceV1().DeviceClasses().Create(ctx, ComputeDomainChannelClass(), metav1.CreateOptions{}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create DeviceClass %s: %w", fedinv.ComputeDomainChannelClass, err)
	}
	for _, n := range nodes {
		if _, err := cs.ResourceV1().ResourceSlices().Create(ctx, channelSlice(n, channels), metav1.CreateOptions{}); err != nil &&
			!apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create channel ResourceSlice of %s: %w", n.Name, err)
		}
	}
	return nil
}

// RunComputeDomains is the simulator's ComputeDomain controller: every
// interval until ctx ends it reconciles every domain of the cluster.
func RunComputeDomains(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, interval time.Duration) {
	log := klog.FromContext(ctx).WithName("computedomains")
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		list, err := dyn.Resource(cdResource).List(ctx, metav1.ListOptions{})
		if err != nil {
			log.Error(err, "Listing ComputeDomains failed")
			return
		}
		for i := range list.Items {
			if err := reconcileDomain(ctx, cs, dyn, &list.Items[i]); err != nil {
				log.Error(err, "Reconciling ComputeDomain failed", "computeDomain", klog.KObj(&list.Items[i]))
			}
		}
	}, interval)
}

// channelConfig is the opaque config of a domain's channel claims: it
// names the domain (by UID), as the real driver's ComputeDomainChannelConfig.
type channelConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	DomainID   string `json:"domainID"`
}

func reconcileDomain(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, cd *unstructured.Unstructured) error {
	if cd.GetDeletionTimestamp() != nil {
		return nil
	}
	tmpl, _, _ := unstructured.NestedString(cd.Object, "spec", "channel", "resourceClaimTemplate", "name")
	num, _, _ := unstructured.NestedInt64(cd.Object, "spec", "numNodes")
	if tmpl == "" {
		return nil
	}
	if err := ensureChannelTemplate(ctx, cs, cd, tmpl); err != nil {
		return err
	}
	nodes, err := channelNodes(ctx, cs, cd)
	if err != nil {
		return err
	}
	status := "NotReady"
	if num > 0 && int64(len(nodes)) >= num {
		status = fedinv.ComputeDomainStatusReady
	}
	var entries []any
	for i, n := range nodes {
		clique := ""
		if node, err := cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{}); err == nil {
			clique = node.Labels[fedinv.LabelGPUClique]
		}
		entries = append(entries, map[string]any{"name": n, "ipAddress": "127.0.0.1", "cliqueID": clique,
			"index": int64(i), "status": fedinv.ComputeDomainStatusReady})
	}
	old, _, _ := unstructured.NestedFieldCopy(cd.Object, "status")
	want := map[string]any{"status": status, "nodes": entries}
	if entries == nil {
		want["nodes"] = []any{}
	}
	if b1, _ := json.Marshal(old); string(b1) == mustJSON(want) {
		return nil
	}
	cd = cd.DeepCopy()
	if err := unstructured.SetNestedField(cd.Object, want, "status"); err != nil {
		return err
	}
	_, err = dyn.Resource(cdResource).Namespace(cd.GetNamespace()).UpdateStatus(ctx, cd, metav1.UpdateOptions{})
	return err
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// ensureChannelTemplate creates the domain's channel ResourceClaimTemplate
// (one channel of the channel class, with the opaque config naming the
// domain), owned by the domain.
func ensureChannelTemplate(ctx context.Context, cs kubernetes.Interface, cd *unstructured.Unstructured, name string) error {
	tmpls := cs.ResourceV1().ResourceClaimTemplates(cd.GetNamespace())
	if _, err := tmpls.Get(ctx, name, metav1.GetOptions{}); err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	params, err := json.Marshal(channelConfig{APIVersion: fedinv.ComputeDomainGroup + "/" + fedinv.ComputeDomainVersion,
		Kind: "ComputeDomainChannelConfig", DomainID: string(cd.GetUID())})
	if err != nil {
		return err
	}
	t := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cd.GetNamespace(),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: cd.GetAPIVersion(), Kind: cd.GetKind(), Name: cd.GetName(),
				UID: cd.GetUID(), Controller: ptr.To(true)}}},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "channel", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: fedinv.ComputeDomainChannelClass, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}},
			Config: []resourcev1.DeviceClaimConfiguration{{DeviceConfiguration: resourcev1.DeviceConfiguration{
				Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: fedinv.ComputeDomainDriver,
					Parameters: runtime.RawExtension{Raw: params}}}}},
		}}},
	}
	_, err = tmpls.Create(ctx, t, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// channelNodes returns, sorted, the nodes where channel claims of the
// domain (their opaque config names its UID) are allocated.
func channelNodes(ctx context.Context, cs kubernetes.Interface, cd *unstructured.Unstructured) ([]string, error) {
	claims, err := cs.ResourceV1().ResourceClaims(cd.GetNamespace()).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.Status.Allocation == nil || !namesDomain(c, string(cd.GetUID())) {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver == fedinv.ComputeDomainDriver {
				seen[r.Pool] = true // the pool is named after its node
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

func namesDomain(c *resourcev1.ResourceClaim, uid string) bool {
	for _, cfg := range c.Spec.Devices.Config {
		if cfg.Opaque == nil || cfg.Opaque.Driver != fedinv.ComputeDomainDriver {
			continue
		}
		var p channelConfig
		if json.Unmarshal(cfg.Opaque.Parameters.Raw, &p) == nil && p.DomainID == uid {
			return true
		}
	}
	return false
}
