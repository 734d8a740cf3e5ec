// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// LocalPodOf returns the local pod the agent made for hub pod hub: the
// managed pod of the same name in the namespace of hub's queue whose hub
// UID is hub's.
//
// A local pod an agent of an earlier version made in the hub pod's own
// namespace (no hub-namespace annotation) is found there too, so that an
// upgraded agent adopts its running members instead of starting them again.
func (s *Syncer) LocalPodOf(hub *corev1.Pod) (*corev1.Pod, bool) {
	if lk, ok := localKey(hub); ok {
		if lp, ok := s.localPod(lk.Namespace, lk.Name); ok && hubUID(lp) == string(hub.UID) {
			return lp, true
		}
	}
	lp, ok := s.localPod(hub.Namespace, hub.Name)
	if !ok || hubUID(lp) != string(hub.UID) || lp.Annotations[v1alpha1.AnnotationHubNamespace] != "" {
		return nil, false
	}
	return lp, true
}

// localPodOfHub returns the managed local pod of hub pod ns/name: through
// the tracked hub pod when the syncer knows it, else by looking for a local
// pod of that name whose hub namespace is ns (after a restart).
func (s *Syncer) localPodOfHub(ns, name string) (*corev1.Pod, bool) {
	s.mu.Lock()
	e := s.pods[key(ns, name)]
	var hub *corev1.Pod
	if e != nil {
		hub = e.hub
	}
	s.mu.Unlock()
	if hub != nil {
		return s.LocalPodOf(hub)
	}
	pods, err := s.cache.PodsOfHubPod(ns, name) // indexed by hubKeyOf
	if err != nil || len(pods) == 0 {
		return nil, false
	}
	return pods[0], true
}

// localRef is the local namespace and name of hub pod ns/name for the
// streams: the hub pod's own when no local pod of it is known (the local
// API server then answers NotFound).
func (s *Syncer) localRef(ns, name string) (string, string) {
	if lp, ok := s.localPodOfHub(ns, name); ok {
		return lp.Namespace, lp.Name
	}
	return ns, name
}

// NodeSummary reads the stats summary of a local node from its kubelet,
// through the local API server's node proxy (nodes/<node>/proxy/stats/summary).
func (s *Syncer) NodeSummary(ctx context.Context, node string) (*statsv1alpha1.Summary, error) {
	b, err := s.local.CoreV1().RESTClient().Get().Resource("nodes").Name(node).
		SubResource("proxy").Suffix("stats/summary").DoRaw(ctx)
	if err != nil {
		return nil, &StatsError{Node: node, Err: err}
	}
	var sum statsv1alpha1.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		return nil, &StatsError{Node: node, Err: fmt.Errorf("decode: %w", err)}
	}
	return &sum, nil
}

// StatsError says that the stats summary of a local node could not be read
// (a KWOK node, for one, serves none).
type StatsError struct {
	Node string
	Err  error
}

func (e *StatsError) Error() string {
	return fmt.Sprintf("stats summary of node %s: %v", e.Node, e.Err)
}

func (e *StatsError) Unwrap() error { return e.Err }
