// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// rendezvousOf reads a cluster's rendezvous Service and EndpointSlices of
// job in namespace ns (the hub's member namespace, or the queue's in a
// workload cluster): the endpoints as host name → address, or an error saying what is
// missing or wrong (a selector, a slice not managed by managedBy).
func rendezvousOf(ctx context.Context, cs kubernetes.Interface, ns, job, managedBy string) (map[string]string, error) {
	svc, err := cs.CoreV1().Services(ns).Get(ctx, v1alpha1.ServiceName(job), metaGet)
	if err != nil {
		return nil, err
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Selector) > 0 || !svc.Spec.PublishNotReadyAddresses {
		return nil, fmt.Errorf("service %s: clusterIP %q selector %v publishNotReady %v", svc.Name,
			svc.Spec.ClusterIP, svc.Spec.Selector, svc.Spec.PublishNotReadyAddresses)
	}
	l, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + v1alpha1.ServiceName(job)})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range l.Items {
		if s.Labels[discoveryv1.LabelManagedBy] != managedBy {
			return nil, fmt.Errorf("slice %s managed by %q, want %q", s.Name, s.Labels[discoveryv1.LabelManagedBy], managedBy)
		}
		for _, e := range s.Endpoints {
			if e.Hostname == nil || len(e.Addresses) != 1 {
				return nil, fmt.Errorf("slice %s endpoint %+v", s.Name, e)
			}
			out[*e.Hostname] = e.Addresses[0]
		}
	}
	return out, nil
}

// rendezvousGone says what of job's rendezvous is left in namespace ns of
// a cluster.
func rendezvousGone(ctx context.Context, cs kubernetes.Interface, ns, job string) error {
	if _, err := cs.CoreV1().Services(ns).Get(ctx, v1alpha1.ServiceName(job), metaGet); !apierrors.IsNotFound(err) {
		return fmt.Errorf("service %s still there (%v)", job, err)
	}
	l, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + v1alpha1.ServiceName(job)})
	if err != nil {
		return err
	}
	if len(l.Items) > 0 {
		return fmt.Errorf("%d endpoint slices of %s left", len(l.Items), job)
	}
	return nil
}

// TestRendezvousInEveryMemberCluster: a 4-member gang split 2 + 2 over two
// clusters (each has room for exactly two members left) gets, in each of
// those clusters, the headless Service and EndpointSlices listing all four
// members by host name and the pod IP each reported, members of the other
// cluster included; the third cluster gets none; all of it goes when the
// job ends.
func TestRendezvousInEveryMemberCluster(t *testing.T) {
	skipShort(t)
	a, b, other := clusterNames[0], clusterNames[1], clusterNames[2]
	// Fill 14 of the 16 nodes of a and b, so that the gang cannot fit in one.
	for _, c := range []string{a, b} {
		name := "rdv-fill-" + c
		submit(t, newJob(name, "e2e", 14, 8, clusterExpr(metav1.LabelSelectorOpIn, c)))
		waitPhase(t, name, v1alpha1.JobRunning, time.Minute)
	}
	submit(t, newJob("rdv", "e2e", 4, 8, clusterExpr(metav1.LabelSelectorOpIn, a, b),
		func(j *v1alpha1.Job) { j.Spec.Placement.MaxClusters = 2 }))
	j := waitPhase(t, "rdv", v1alpha1.JobRunning, time.Minute)
	perCluster := map[string]int{}
	for _, m := range j.Status.Members {
		perCluster[m.Cluster]++
	}
	if perCluster[a] != 2 || perCluster[b] != 2 {
		t.Fatalf("members per cluster %v, want 2 on %s and 2 on %s", perCluster, a, b)
	}
	// The addresses the members report: hub pod IPs, copied from the local pods.
	want := map[string]string{}
	eventually(t, 30*time.Second, "every member reports its pod IP", func(ctx context.Context) (bool, error) {
		pods, err := hubPods(ctx, "rdv")
		if err != nil {
			return false, err
		}
		clear(want)
		for _, p := range pods {
			if p.Status.PodIP == "" {
				return false, fmt.Errorf("member %s has no pod IP", p.Name)
			}
			want["rdv-"+p.Labels[v1alpha1.LabelMember]] = p.Status.PodIP
		}
		return len(want) == 4, fmt.Errorf("%d members with IPs", len(want))
	})
	local, err := localPods(t.Context(), "rdv")
	if err != nil {
		t.Fatal(err)
	}
	for c, ps := range local {
		for _, p := range ps {
			if got := want["rdv-"+p.Labels[v1alpha1.LabelMember]]; got != p.Status.PodIP {
				t.Fatalf("member %s on %s: local pod IP %s, hub pod IP %s", p.Name, c, p.Status.PodIP, got)
			}
			if p.Spec.Hostname != "rdv-"+p.Labels[v1alpha1.LabelMember] || p.Spec.Subdomain != "rdv" {
				t.Fatalf("member %s on %s: hostname %q subdomain %q", p.Name, c, p.Spec.Hostname, p.Spec.Subdomain)
			}
		}
	}
	reported := time.Now()
	// On the hub in each member cluster's namespace, and in every member
	// cluster in the queue's namespace, where the members run and
	// MASTER_ADDR points.
	queueNS := v1alpha1.LocalMemberNamespace("e2e")
	check := func(where string, cs kubernetes.Interface, ns, managedBy string) {
		eventually(t, 30*time.Second, "rendezvous of all four members in "+where, func(ctx context.Context) (bool, error) {
			got, err := rendezvousOf(ctx, cs, ns, "rdv", managedBy)
			if err != nil {
				return false, err
			}
			return maps.Equal(got, want), fmt.Errorf("endpoints %v, want %v", got, want)
		})
	}
	// On the hub, in each member cluster's namespace: all four members.
	check("the hub namespace of "+a, h.kube, v1alpha1.ClusterNamespace(a), v1alpha1.SliceManagedByHub)
	check("the hub namespace of "+b, h.kube, v1alpha1.ClusterNamespace(b), v1alpha1.SliceManagedByHub)
	check(a, workloads[a], queueNS, v1alpha1.SliceManagedByAgent)
	check(b, workloads[b], queueNS, v1alpha1.SliceManagedByAgent)
	if err := rendezvousGone(t.Context(), workloads[other], queueNS, "rdv"); err != nil {
		t.Fatalf("cluster %s holds no member but: %v", other, err)
	}
	if err := rendezvousGone(t.Context(), h.kube, v1alpha1.ClusterNamespace(other), "rdv"); err != nil {
		t.Fatalf("the hub namespace of %s, which holds no member, has: %v", other, err)
	}
	t.Logf("members %v; rendezvous in the hub, %s and %s %v after the last member reported its IP",
		want, a, b, time.Since(reported).Round(time.Millisecond))
	if _, _, err := h.jobs.Cancel(t.Context(), "rdv"); err != nil {
		t.Fatal(err)
	}
	type place struct {
		cs kubernetes.Interface
		ns string
	}
	for where, p := range map[string]place{"the hub namespace of " + a: {h.kube, v1alpha1.ClusterNamespace(a)},
		"the hub namespace of " + b: {h.kube, v1alpha1.ClusterNamespace(b)}, a: {workloads[a], queueNS}, b: {workloads[b], queueNS}} {
		eventually(t, time.Minute, "rendezvous removed from "+where, func(ctx context.Context) (bool, error) {
			err := rendezvousGone(ctx, p.cs, p.ns, "rdv")
			return err == nil, err
		})
	}
}
