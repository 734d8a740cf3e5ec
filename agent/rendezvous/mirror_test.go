// SPDX-License-Identifier: Apache-2.0

package rendezvous_test

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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/agent/rendezvous"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testpod"
)

// hubNS is the cluster's namespace on the hub, where the hub's objects
// are; localNS the workload cluster's namespace of the members' queue,
// where the mirror lives.
var (
	hubNS   = v1alpha1.ClusterNamespace("eu1")
	localNS = v1alpha1.LocalMemberNamespace("team")
)

// localMember is a local member pod of job in the queue namespace, made
// from a hub pod in hubNS.
func localMember(name, job string) *corev1.Pod {
	return testpod.New(name).Namespace(localNS).Label(v1alpha1.LabelJob, job).Label(v1alpha1.LabelManaged, "true").
		Annotation(v1alpha1.AnnotationHubNamespace, hubNS).Obj()
}

func hubService(job string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: job, Namespace: hubNS, Labels: map[string]string{v1alpha1.LabelJob: job}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{{Name: "rendezvous", Protocol: corev1.ProtocolTCP, Port: 29500}}}}
}

func hubSlice(job string, k int, ips ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.EndpointSliceName(job, k), Namespace: hubNS,
		Labels: map[string]string{v1alpha1.LabelJob: job, discoveryv1.LabelServiceName: job,
			discoveryv1.LabelManagedBy: v1alpha1.SliceManagedByHub}}, AddressType: discoveryv1.AddressTypeIPv4}
	for i, ip := range ips {
		h, ready := v1alpha1.MemberHostname(job, int32(i)), true
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Hostname: &h,
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	return s
}

func TestMirrorBuilders(t *testing.T) {
	svc := rendezvous.MirrorService(hubService("g"), localNS)
	if svc.Name != "g" || svc.Namespace != localNS || svc.Spec.Selector != nil || svc.Spec.ClusterIP != corev1.ClusterIPNone ||
		!svc.Spec.PublishNotReadyAddresses || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 29500 {
		t.Errorf("service %+v", svc)
	}
	if want := map[string]string{v1alpha1.LabelJob: "g", v1alpha1.LabelManaged: "true"}; !maps.Equal(svc.Labels, want) {
		t.Errorf("service labels %v, want %v", svc.Labels, want)
	}
	hs := hubSlice("g", 0, "10.1.0.4", "10.2.0.5")
	sl := rendezvous.MirrorSlice(hs, localNS)
	want := map[string]string{v1alpha1.LabelJob: "g", v1alpha1.LabelManaged: "true", discoveryv1.LabelServiceName: "g",
		discoveryv1.LabelManagedBy: v1alpha1.SliceManagedByAgent}
	if sl.Name != hs.Name || sl.Namespace != localNS || !maps.Equal(sl.Labels, want) || sl.AddressType != discoveryv1.AddressTypeIPv4 {
		t.Errorf("slice %s/%s labels %v type %s", sl.Namespace, sl.Name, sl.Labels, sl.AddressType)
	}
	if len(sl.Endpoints) != 2 || *sl.Endpoints[1].Hostname != "g-1" || sl.Endpoints[1].Addresses[0] != "10.2.0.5" {
		t.Errorf("endpoints %+v", sl.Endpoints)
	}
	*hs.Endpoints[0].Hostname = "changed"
	if *sl.Endpoints[0].Hostname != "g-0" {
		t.Error("the mirror shares memory with the hub slice")
	}
}

// rig is a mirror between two fake clusters.
type rig struct {
	t          *testing.T
	ctx        context.Context
	hub, local *fake.Clientset
}

func newRig(t *testing.T) *rig {
	ctx, cancel := context.WithCancel(t.Context())
	r := &rig{t: t, ctx: ctx, hub: fake.NewClientset(), local: fake.NewClientset()}
	workload, err := cluster.New(r.local)
	if err != nil {
		t.Fatal(err)
	}
	m := rendezvous.New(r.hub, hubNS, workload)
	done := make(chan error, 2)
	go func() { done <- workload.Run(ctx) }()
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		}
	})
	return r
}

// eventually waits for check to return nil.
func (r *rig) eventually(what string, check func() error) {
	r.t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(r.ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
	})
	if err != nil {
		r.t.Fatalf("%s: %v", what, last)
	}
}

// localEndpoints is the local mirror of job as host → IP, or an error when
// the Service or a slice is missing or not the agent's.
func (r *rig) localEndpoints(job string) (map[string]string, error) {
	svc, err := r.local.CoreV1().Services(localNS).Get(r.ctx, job, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if svc.Spec.Selector != nil || svc.Spec.ClusterIP != corev1.ClusterIPNone {
		return nil, fmt.Errorf("service spec %+v", svc.Spec)
	}
	l, err := r.local.DiscoveryV1().EndpointSlices(localNS).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range l.Items {
		if s.Labels[discoveryv1.LabelManagedBy] != v1alpha1.SliceManagedByAgent || s.Labels[discoveryv1.LabelServiceName] != job {
			return nil, fmt.Errorf("slice %s labels %v", s.Name, s.Labels)
		}
		for _, e := range s.Endpoints {
			out[*e.Hostname] = e.Addresses[0]
		}
	}
	return out, nil
}

func (r *rig) gone(job string) error {
	if _, err := r.local.CoreV1().Services(localNS).Get(r.ctx, job, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return fmt.Errorf("service still there (%v)", err)
	}
	l, err := r.local.DiscoveryV1().EndpointSlices(localNS).List(r.ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) > 0 {
		return fmt.Errorf("slices left: %d (%v)", len(l.Items), err)
	}
	return nil
}

func expect(want map[string]string) func(map[string]string, error) error {
	return func(got map[string]string, err error) error {
		if err != nil {
			return err
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("endpoints %v, want %v", got, want)
		}
		return nil
	}
}

func TestMirrorFollowsTheHubWhileAMemberIsLocal(t *testing.T) {
	r := newRig(t)
	if _, err := r.hub.CoreV1().Services(hubNS).Create(r.ctx, hubService("g"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.hub.DiscoveryV1().EndpointSlices(hubNS).Create(r.ctx, hubSlice("g", 0, "10.1.0.4", "10.2.0.5"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A slice someone else manages in the hub is not mirrored.
	foreign := hubSlice("g", 9, "10.9.9.9")
	foreign.Labels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
	if _, err := r.hub.DiscoveryV1().EndpointSlices(hubNS).Create(r.ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Job "other" has its Service on the hub but no member here.
	if _, err := r.hub.CoreV1().Services(hubNS).Create(r.ctx, hubService("other"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.hub.DiscoveryV1().EndpointSlices(hubNS).Create(r.ctx, hubSlice("other", 0, "10.3.0.1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	member := localMember("g-e1-1", "g")
	if _, err := r.local.CoreV1().Pods(localNS).Create(r.ctx, member, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.eventually("mirror of both members", func() error {
		return expect(map[string]string{"g-0": "10.1.0.4", "g-1": "10.2.0.5"})(r.localEndpoints("g"))
	})
	// The hub events of "other" came first, so the mirror has seen them by now.
	if _, err := r.local.CoreV1().Services(localNS).Get(r.ctx, "other", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("job other mirrored without a local member (%v)", err)
	}
	if _, err := r.hub.DiscoveryV1().EndpointSlices(hubNS).Update(r.ctx, hubSlice("g", 0, "10.1.0.4", "10.2.0.6"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.eventually("mirror follows a new IP", func() error {
		return expect(map[string]string{"g-0": "10.1.0.4", "g-1": "10.2.0.6"})(r.localEndpoints("g"))
	})
	if err := r.local.DiscoveryV1().EndpointSlices(localNS).Delete(r.ctx, "g-rdv-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.eventually("a deleted mirror slice is put back", func() error {
		return expect(map[string]string{"g-0": "10.1.0.4", "g-1": "10.2.0.6"})(r.localEndpoints("g"))
	})
	if err := r.local.CoreV1().Pods(localNS).Delete(r.ctx, member.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.eventually("mirror removed with the last local member", func() error { return r.gone("g") })
}

func TestMirrorRemovedWithTheHubService(t *testing.T) {
	r := newRig(t)
	member := localMember("h-e1-0", "h")
	if _, err := r.local.CoreV1().Pods(localNS).Create(r.ctx, member, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.hub.CoreV1().Services(hubNS).Create(r.ctx, hubService("h"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	second := hubSlice("h", 1, "10.0.0.1")
	*second.Endpoints[0].Hostname = "h-1"
	for _, s := range []*discoveryv1.EndpointSlice{hubSlice("h", 0, "10.0.0.0"), second} {
		if _, err := r.hub.DiscoveryV1().EndpointSlices(hubNS).Create(r.ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r.eventually("mirror of two slices", func() error {
		return expect(map[string]string{"h-0": "10.0.0.0", "h-1": "10.0.0.1"})(r.localEndpoints("h"))
	})
	if err := r.hub.DiscoveryV1().EndpointSlices(hubNS).Delete(r.ctx, "h-rdv-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.eventually("a slice gone from the hub goes here", func() error {
		if _, err := r.local.DiscoveryV1().EndpointSlices(localNS).Get(r.ctx, "h-rdv-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("h-rdv-1 still mirrored (%v)", err)
		}
		return expect(map[string]string{"h-0": "10.0.0.0"})(r.localEndpoints("h"))
	})
	if err := r.hub.CoreV1().Services(hubNS).Delete(r.ctx, "h", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.eventually("mirror removed with the hub Service", func() error { return r.gone("h") })
}
