// SPDX-License-Identifier: Apache-2.0

package rendezvous

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// mirrorLabels are the labels of a job's mirrored objects.
func mirrorLabels(job string) map[string]string {
	return map[string]string{v1alpha1.LabelJob: job, v1alpha1.LabelManaged: "true"}
}

// MirrorService is the workload cluster's copy, in namespace ns (the
// members' queue namespace), of a hub rendezvous Service: headless, without a selector, publishing not-ready addresses,
// with the hub's ports.
func MirrorService(hub *corev1.Service, ns string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: hub.Name, Namespace: ns, Labels: mirrorLabels(hub.Labels[v1alpha1.LabelJob])},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
			Ports: append([]corev1.ServicePort(nil), hub.Spec.Ports...)},
	}
}

// MirrorSlice is the workload cluster's copy, in namespace ns, of a hub
// rendezvous EndpointSlice: the same name, address type, endpoints and ports, managed
// by the agent.
func MirrorSlice(hub *discoveryv1.EndpointSlice, ns string) *discoveryv1.EndpointSlice {
	l := mirrorLabels(hub.Labels[v1alpha1.LabelJob])
	l[discoveryv1.LabelServiceName] = hub.Labels[discoveryv1.LabelServiceName]
	l[discoveryv1.LabelManagedBy] = v1alpha1.SliceManagedByAgent
	s := hub.DeepCopy()
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: hub.Name, Namespace: ns, Labels: l},
		AddressType: s.AddressType, Endpoints: s.Endpoints, Ports: s.Ports,
	}
}

// serviceDrifted says whether the local Service cur differs from want in
// what the mirror sets (the API server defaults the rest).
func serviceDrifted(cur, want *corev1.Service) bool {
	return cur.Spec.ClusterIP != corev1.ClusterIPNone || len(cur.Spec.Selector) > 0 ||
		cur.Spec.PublishNotReadyAddresses != want.Spec.PublishNotReadyAddresses ||
		!equality.Semantic.DeepEqual(cur.Spec.Ports, want.Spec.Ports) || !equality.Semantic.DeepEqual(cur.Labels, want.Labels)
}

// sliceDrifted says whether the local slice cur differs from want.
func sliceDrifted(cur, want *discoveryv1.EndpointSlice) bool {
	return cur.AddressType != want.AddressType || !equality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) ||
		!equality.Semantic.DeepEqual(cur.Ports, want.Ports) || !equality.Semantic.DeepEqual(cur.Labels, want.Labels)
}
