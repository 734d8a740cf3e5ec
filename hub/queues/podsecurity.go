// SPDX-License-Identifier: Apache-2.0

package queues

import (
	"context"
	"errors"
	"fmt"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// PodSecurity is the effective pod-security level of queue name
// (v1alpha1.EffectivePodSecurity over its path, read from r) and the queue
// on the path that set it ("" for the default). A queue of the path that
// does not exist sets nothing: the level of a job's missing queue is its
// ancestors' (submit refuses the job for the missing queue anyway).
func PodSecurity(ctx context.Context, r store.Reader[*v1alpha1.Queue], name string) (v1alpha1.PodSecurityLevel, string, error) {
	q, _, err := r.Get(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		q = nil
	case err != nil:
		return "", "", fmt.Errorf("read the pod-security level of queue %q: %w", name, err)
	}
	return PodSecurityOf(ctx, r, name, q)
}

// PodSecurityOf is PodSecurity of queue name read already as q (nil: it
// does not exist); only its ancestors are read from r.
func PodSecurityOf(ctx context.Context, r store.Reader[*v1alpha1.Queue], name string, q *v1alpha1.Queue) (v1alpha1.PodSecurityLevel, string, error) {
	path := append(v1alpha1.QueueAncestors(name), name)
	levels := make([]v1alpha1.PodSecurityLevel, len(path))
	for i, n := range path[:len(path)-1] {
		a, _, err := r.Get(ctx, n)
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			return "", "", fmt.Errorf("read the pod-security level of queue %q: %w", n, err)
		}
		levels[i] = a.Spec.PodSecurity
	}
	if q != nil {
		levels[len(path)-1] = q.Spec.PodSecurity
	}
	l, from := v1alpha1.EffectivePodSecurity(levels...)
	if from < 0 {
		return l, "", nil
	}
	return l, path[from], nil
}
