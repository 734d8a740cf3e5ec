// SPDX-License-Identifier: Apache-2.0

// Package testqueue builds v1alpha1.Queues for tests:
// testqueue.New("org/team").Weight(2).Quota("h100", 64).Obj().
package testqueue

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Wrapper wraps a Queue under construction.
type Wrapper struct{ q v1alpha1.Queue }

// New returns a Queue with no weight (the default) and no quotas.
func New(name string) *Wrapper {
	return &Wrapper{q: v1alpha1.Queue{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindQueue},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}}
}

// Obj returns the Queue.
func (w *Wrapper) Obj() *v1alpha1.Queue { return &w.q }

// Weight sets the fair-share weight.
func (w *Wrapper) Weight(n int32) *Wrapper { w.q.Spec.Weight = &n; return w }

// Quota sets the nominal quota of a GPU class (borrowing unlimited).
func (w *Wrapper) Quota(class string, nominal int32) *Wrapper {
	if w.q.Spec.Quotas == nil {
		w.q.Spec.Quotas = map[string]v1alpha1.GPUQuota{}
	}
	w.q.Spec.Quotas[class] = v1alpha1.GPUQuota{Nominal: nominal}
	return w
}

// BorrowingLimit sets the borrowing limit of a GPU class already given a Quota.
func (w *Wrapper) BorrowingLimit(class string, n int32) *Wrapper {
	q := w.q.Spec.Quotas[class]
	q.BorrowingLimit = &n
	w.Quota(class, q.Nominal)
	w.q.Spec.Quotas[class] = q
	return w
}

// PodSecurity sets the queue's Pod Security Standards level.
func (w *Wrapper) PodSecurity(l v1alpha1.PodSecurityLevel) *Wrapper {
	w.q.Spec.PodSecurity = l
	return w
}
