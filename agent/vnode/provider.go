// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/agent/podsync"
)

// provider is the virtual-kubelet PodLifecycleHandler of one virtual node;
// all nodes share one podsync.Syncer.
type provider struct {
	node string
	s    *podsync.Syncer
}

func (p *provider) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	return p.s.CreatePod(ctx, p.node, pod)
}

func (p *provider) UpdatePod(ctx context.Context, pod *corev1.Pod) error {
	return p.s.UpdatePod(ctx, p.node, pod)
}

func (p *provider) DeletePod(ctx context.Context, pod *corev1.Pod) error {
	return p.s.DeletePod(ctx, pod)
}

func (p *provider) GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	return p.s.GetPod(ctx, ns, name)
}

func (p *provider) GetPodStatus(ctx context.Context, ns, name string) (*corev1.PodStatus, error) {
	return p.s.GetPodStatus(ctx, ns, name)
}

func (p *provider) GetPods(ctx context.Context) ([]*corev1.Pod, error) {
	return p.s.GetPods(ctx, p.node)
}

func (p *provider) NotifyPods(_ context.Context, cb func(*corev1.Pod)) {
	p.s.Notify(p.node, cb)
}
