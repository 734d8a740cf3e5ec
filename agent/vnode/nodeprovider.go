// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"context"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// nodeProvider is the virtual-kubelet NodeProvider of one virtual node: it
// owns the node's capacity and Ready condition and pushes changes.
type nodeProvider struct {
	m    *Manager
	mu   sync.Mutex
	node *corev1.Node
	pool fedinv.Pool
	held int
	// heldFn, once the pod controller is assembled, says what the node's
	// member pods hold of the pool (nil: nothing yet).
	heldFn  func() int
	ready   bool
	msg     string
	changed chan struct{}
}

func newNodeProvider(m *Manager, n *corev1.Node, p fedinv.Pool) *nodeProvider {
	return &nodeProvider{m: m, node: n.DeepCopy(), pool: p, ready: true, changed: make(chan struct{}, 1)}
}

// Ping reports the provider alive; readiness is carried by the Ready condition.
func (np *nodeProvider) Ping(context.Context) error { return nil }

// NotifyNodeStatus delivers the latest node on every change, from its own
// goroutine, so that a slow hub never blocks the inventory loop.
func (np *nodeProvider) NotifyNodeStatus(ctx context.Context, cb func(*corev1.Node)) {
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-np.changed:
			}
			np.mu.Lock()
			n := np.node.DeepCopy()
			np.mu.Unlock()
			cb(n)
		}
	}()
}

// set updates the pool, what the members hold and readiness; it pushes
// only real changes.
func (np *nodeProvider) set(p fedinv.Pool, ready bool, msg string) {
	np.mu.Lock()
	defer np.mu.Unlock()
	held := 0
	if np.heldFn != nil {
		held = np.heldFn()
	}
	if reflect.DeepEqual(np.pool, p) && np.held == held && np.ready == ready && np.msg == msg {
		return
	}
	np.pool, np.held, np.ready, np.msg = p, held, ready, msg
	next := np.node.DeepCopy()
	np.m.setStatus(next, p, held, ready, msg)
	if apiequality.Semantic.DeepEqual(next.Status.Capacity, np.node.Status.Capacity) &&
		apiequality.Semantic.DeepEqual(next.Status.Allocatable, np.node.Status.Allocatable) && readyOf(next) == readyOf(np.node) &&
		conditionMessage(next) == conditionMessage(np.node) && reflect.DeepEqual(next.Annotations, np.node.Annotations) {
		return
	}
	np.node = next
	select {
	case np.changed <- struct{}{}:
	default:
	}
}

func readyOf(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

func conditionMessage(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Message
		}
	}
	return ""
}
