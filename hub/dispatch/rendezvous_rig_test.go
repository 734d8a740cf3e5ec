// SPDX-License-Identifier: Apache-2.0

package dispatch_test

import (
	"context"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/dispatch"
)

// endpoints reads the job's rendezvous EndpointSlices of eu1's namespace
// back as host name → address, failing on a slice that is not the hub's.
func (r *rig) endpoints(job string) map[string]string {
	r.T.Helper()
	return r.endpointsIn(ns, job)
}

// endpointsIn is endpoints in namespace.
func (r *rig) endpointsIn(namespace, job string) map[string]string {
	r.T.Helper()
	l, err := r.hub.DiscoveryV1().EndpointSlices(namespace).List(r.Ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job})
	if err != nil {
		r.T.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range l.Items {
		if s.Labels["kubernetes.io/service-name"] != job || s.Labels["endpointslice.kubernetes.io/managed-by"] != "shoal-hub" {
			r.T.Fatalf("slice %s labels %v", s.Name, s.Labels)
		}
		for _, e := range s.Endpoints {
			out[*e.Hostname] = e.Addresses[0]
		}
	}
	return out
}

// TestRendezvousSpansClusters: a gang split over two clusters gets one
// selectorless headless Service whose EndpointSlice lists every member, of
// both clusters, by the pod IP its agent reported; both go with the job.
func TestRendezvousSpansClusters(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0))
	r.Cluster("us1", node("b", "r", 0))
	r.Submit("mix", 2, 8, func(j *v1alpha1.Job) { j.Spec.Placement.MaxClusters = 2 })
	r.cycle()
	r.pass()
	both := []string{v1alpha1.ClusterNamespace("eu1"), v1alpha1.ClusterNamespace("us1")}
	for _, n := range both {
		svc, err := r.hub.CoreV1().Services(n).Get(r.Ctx, "mix", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("rendezvous service in %s: %v", n, err)
		}
		if svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.Selector != nil || !svc.Spec.PublishNotReadyAddresses {
			t.Fatalf("service spec %+v", svc.Spec)
		}
	}
	if got := r.endpoints("mix"); len(got) != 0 {
		t.Fatalf("endpoints before any member has an IP: %v", got)
	}
	clusters := map[string]bool{}
	ips := map[string]string{}
	for _, p := range r.pods("mix") {
		clusters[p.Labels[v1alpha1.LabelCluster]] = true
		p.Status.PodIP = "10." + map[string]string{"eu1": "1", "us1": "2"}[p.Labels[v1alpha1.LabelCluster]] + ".0." + p.Labels[v1alpha1.LabelMember]
		ips["mix-"+p.Labels[v1alpha1.LabelMember]] = p.Status.PodIP
		if _, err := r.hub.CoreV1().Pods(p.Namespace).UpdateStatus(r.Ctx, &p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(clusters) != 2 {
		t.Fatalf("gang on %v, want two clusters", clusters)
	}
	r.pass()
	for _, n := range both { // each cluster's namespace lists every member
		if got := r.endpointsIn(n, "mix"); len(got) != 2 || got["mix-0"] != ips["mix-0"] || got["mix-1"] != ips["mix-1"] {
			t.Fatalf("endpoints in %s %v, want %v", n, got, ips)
		}
	}
	if _, _, err := r.Jobs.Cancel(r.Ctx, "mix"); err != nil {
		t.Fatal(err)
	}
	r.pass()
	r.pass()
	for _, n := range both {
		if _, err := r.hub.CoreV1().Services(n).Get(r.Ctx, "mix", metav1.GetOptions{}); err == nil {
			t.Fatalf("rendezvous service left behind in %s", n)
		}
		if got := r.endpointsIn(n, "mix"); len(got) != 0 {
			t.Fatalf("endpoints left behind in %s: %v", n, got)
		}
	}
}

// TestRendezvousLeftoversSwept: a rendezvous Service of a job with neither
// a reservation nor a member (a teardown whose delete failed) is removed by
// the next pass; another job's is kept.
func TestRendezvousLeftoversSwept(t *testing.T) {
	r := placedRig(t, "live")
	ghost := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ghost", Namespace: ns,
		Labels: map[string]string{v1alpha1.LabelJob: "ghost"}}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}
	if _, err := r.hub.CoreV1().Services(ns).Create(r.Ctx, ghost, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCached(t, r, "ghost")
	r.pass()
	if _, err := r.hub.CoreV1().Services(ns).Get(r.Ctx, "ghost", metav1.GetOptions{}); err == nil {
		t.Fatal("leftover service kept")
	}
	if _, err := r.hub.CoreV1().Services(ns).Get(r.Ctx, "live", metav1.GetOptions{}); err != nil {
		t.Fatalf("live job's service: %v", err)
	}
}

// TestRendezvousLeavesAClusterItNoLongerHolds: a live job's Service in the
// namespace of a cluster that holds none of its members (the gang moved)
// is removed on the job's next pass; the Service of the same name of
// another job there is kept.
func TestRendezvousLeavesAClusterItNoLongerHolds(t *testing.T) {
	r := placedRig(t, "live")
	other := v1alpha1.ClusterNamespace("us1")
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "live", Namespace: other, Labels: map[string]string{v1alpha1.LabelJob: "live"}},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: other, Labels: map[string]string{v1alpha1.LabelJob: "kept"}},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}},
	} {
		if _, err := r.hub.CoreV1().Services(other).Create(r.Ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitCached(t, r, "kept")
	waitCachedIn(t, r, other, "live")
	r.pass()
	if _, err := r.hub.CoreV1().Services(other).Get(r.Ctx, "live", metav1.GetOptions{}); err == nil {
		t.Fatal("the job's service kept in a cluster that holds none of its members")
	}
	if _, err := r.hub.CoreV1().Services(ns).Get(r.Ctx, "live", metav1.GetOptions{}); err != nil {
		t.Fatalf("the job's service where its member is: %v", err)
	}
}

// waitCachedIn waits until the rig's dispatcher has the Service
// namespace/name cached.
func waitCachedIn(t *testing.T, r *rig, namespace, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(r.Ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return dispatch.CachedServiceIn(r.disp, namespace, name), nil
	})
	if err != nil {
		t.Fatalf("service %s/%s never cached: %v", namespace, name, err)
	}
}

// waitCached waits until the rig's dispatcher has the Service name cached.
func waitCached(t *testing.T, r *rig, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(r.Ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return dispatch.CachedService(r.disp, name), nil
	})
	if err != nil {
		t.Fatalf("service %s never cached: %v", name, err)
	}
}

// reportIPs plays the agents reporting a pod IP on every member of job:
// <prefix>.<index>.
func (r *rig) reportIPs(job, prefix string) map[string]string {
	r.T.Helper()
	want := map[string]string{}
	for _, p := range r.pods(job) {
		p.Status.PodIP = prefix + "." + p.Labels[v1alpha1.LabelMember]
		want[job+"-"+p.Labels[v1alpha1.LabelMember]] = p.Status.PodIP
		if _, err := r.hub.CoreV1().Pods(p.Namespace).UpdateStatus(r.Ctx, &p, metav1.UpdateOptions{}); err != nil {
			r.T.Fatal(err)
		}
	}
	return want
}

// TestRendezvousFollowsTheEpoch: a restarted gang's rendezvous lists only
// its new members: the old epoch's Service and slices go with the old
// members, and the new epoch's start empty until its members report.
func TestRendezvousFollowsTheEpoch(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit("llama", 2, 8)
	r.cycle()
	r.pass()
	r.agent("llama", -1, "")
	r.pass()
	r.agent("llama", -1, corev1.PodRunning)
	want := r.reportIPs("llama", "10.1.0")
	r.pass()
	if got := r.endpoints("llama"); !maps.Equal(got, want) {
		t.Fatalf("epoch 1 endpoints %v, want %v", got, want)
	}
	p := r.pods("llama")[0]
	p.Status.Phase = corev1.PodFailed
	if _, err := r.hub.CoreV1().Pods(p.Namespace).UpdateStatus(r.Ctx, &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.pass() // the restart tears the gang down
	r.pass() // and releases it with its rendezvous
	if _, err := r.hub.CoreV1().Services(ns).Get(r.Ctx, "llama", metav1.GetOptions{}); err == nil {
		t.Fatal("epoch 1's service kept after the teardown")
	}
	if got := r.endpoints("llama"); len(got) != 0 {
		t.Fatalf("epoch 1's endpoints kept after the teardown: %v", got)
	}
	r.cycle()
	r.pass()
	if _, err := r.hub.CoreV1().Services(ns).Get(r.Ctx, "llama", metav1.GetOptions{}); err != nil {
		t.Fatalf("epoch 2's service: %v", err)
	}
	if got := r.endpoints("llama"); len(got) != 0 {
		t.Fatalf("epoch 2 lists members before they report: %v", got)
	}
	r.agent("llama", -1, "")
	r.pass()
	r.agent("llama", -1, corev1.PodRunning)
	want = r.reportIPs("llama", "10.2.0")
	r.pass()
	if got := r.endpoints("llama"); !maps.Equal(got, want) {
		t.Fatalf("epoch 2 endpoints %v, want %v", got, want)
	}
}

// TestRendezvousServiceOfAnOlderHub: a Service an older hub created for
// the job, with a selector and no ports, is turned into the selectorless
// one.
func TestRendezvousServiceOfAnOlderHub(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0))
	old := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "llama", Namespace: ns,
		Labels: map[string]string{v1alpha1.LabelJob: "llama"}}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
		Selector: map[string]string{v1alpha1.LabelJob: "llama"}}}
	if _, err := r.hub.CoreV1().Services(ns).Create(r.Ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Submit("llama", 1, 8)
	r.cycle()
	waitCached(t, r, "llama")
	r.pass()
	svc, err := r.hub.CoreV1().Services(ns).Get(r.Ctx, "llama", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Selector != nil || !svc.Spec.PublishNotReadyAddresses || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 29500 {
		t.Fatalf("service spec %+v", svc.Spec)
	}
}
