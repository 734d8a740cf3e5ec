// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"net"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// rendezvousPortName names the master port on the rendezvous Service and
// its EndpointSlices (SRV _rendezvous._tcp.<job>.<namespace>).
const rendezvousPortName = "rendezvous"

// headlessService is the job's rendezvous Service: headless and without a
// selector, since its endpoints are the members of every cluster, listed by
// the EndpointSlices the dispatcher keeps (endpointSlices), not pods of
// this cluster.
func headlessService(j *v1alpha1.Job, namespace string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ServiceName(j.Name), Namespace: namespace,
			Labels: map[string]string{v1alpha1.LabelJob: j.Name}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{{Name: rendezvousPortName, Protocol: corev1.ProtocolTCP, Port: masterPort(j)}}},
	}
}

// masterPort is the job's MASTER_PORT.
func masterPort(j *v1alpha1.Job) int32 {
	if j.Spec.Rendezvous.Port == 0 { // a job stored before the field had a default
		return v1alpha1.DefaultMasterPort
	}
	return j.Spec.Rendezvous.Port
}

// memberAddress is the address a member is reached at: the pod IP its
// agent reported, or, for a hostNetwork member, the node's IP (which a
// kubelet also reports as the pod IP of such a pod). Empty while the member
// has none, or once it has ended or is going away (its IP may be reused).
func memberAddress(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return ""
	}
	if p.Spec.HostNetwork && p.Status.HostIP != "" {
		return p.Status.HostIP
	}
	return p.Status.PodIP
}

// routable says whether ip may be an EndpointSlice address: the API server
// refuses unspecified, loopback and link-local ones (no other node could
// reach them anyway), and one refused address would keep every member of
// its slice from being listed.
func routable(ip net.IP) bool {
	return ip != nil && !ip.IsUnspecified() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() && !ip.IsLinkLocalMulticast()
}

// endpointSlices are the job's rendezvous EndpointSlices in namespace: one
// endpoint per member of pods (the current epoch's, in any cluster) that
// has a routable address, with host name <job>-<index> and Ready (the Service
// publishes members before they are ready: they must find each other to
// become so), IPv4 and IPv6 members in slices of their own, at most
// MaxEndpointsPerSlice per slice, named EndpointSliceName(job, 0, 1, ...).
// With no member addressed yet it returns one empty IPv4 slice, so the
// Service has its slice from the start.
func endpointSlices(j *v1alpha1.Job, namespace string, pods []*corev1.Pod) []*discoveryv1.EndpointSlice {
	type member struct {
		index int
		ip    string
	}
	byFamily := map[discoveryv1.AddressType][]member{}
	for _, p := range pods {
		ip := net.ParseIP(memberAddress(p))
		idx, err := strconv.Atoi(p.Labels[v1alpha1.LabelMember])
		if !routable(ip) || err != nil {
			continue
		}
		fam := discoveryv1.AddressTypeIPv6
		if ip.To4() != nil {
			fam = discoveryv1.AddressTypeIPv4
		}
		byFamily[fam] = append(byFamily[fam], member{idx, ip.String()})
	}
	var out []*discoveryv1.EndpointSlice
	for _, fam := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
		ms := byFamily[fam]
		sort.Slice(ms, func(a, b int) bool { return ms[a].index < ms[b].index })
		for start := 0; start < len(ms); start += v1alpha1.MaxEndpointsPerSlice {
			s := emptySlice(j, namespace, len(out), fam)
			for _, m := range ms[start:min(start+v1alpha1.MaxEndpointsPerSlice, len(ms))] {
				s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{m.ip},
					Hostname:   ptrTo(v1alpha1.MemberHostname(j.Name, int32(m.index))),
					Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true)}})
			}
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		out = append(out, emptySlice(j, namespace, 0, discoveryv1.AddressTypeIPv4))
	}
	return out
}

// emptySlice is the k-th rendezvous EndpointSlice of j, without endpoints.
func emptySlice(j *v1alpha1.Job, namespace string, k int, fam discoveryv1.AddressType) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.EndpointSliceName(j.Name, k), Namespace: namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: v1alpha1.ServiceName(j.Name),
				discoveryv1.LabelManagedBy: v1alpha1.SliceManagedByHub, v1alpha1.LabelJob: j.Name}},
		AddressType: fam,
		Ports: []discoveryv1.EndpointPort{{Name: ptrTo(rendezvousPortName), Protocol: ptrTo(corev1.ProtocolTCP),
			Port: ptrTo(masterPort(j))}},
	}
}

func ptrTo[T any](v T) *T { return &v }
