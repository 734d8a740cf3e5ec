// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// LocalPodOf returns the local pod the agent made for hub pod hub: the
// managed pod of the same namespace and name whose hub UID is hub's.
func (s *Syncer) LocalPodOf(hub *corev1.Pod) (*corev1.Pod, bool) {
	lp, ok := s.localPod(hub.Namespace, hub.Name)
	if !ok || hubUID(lp) != string(hub.UID) {
		return nil, false
	}
	return lp, true
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
