// SPDX-License-Identifier: Apache-2.0

// Package kubeindex indexes informer caches by a label's value, for the
// hub and the agent alike: a job's member pods, rendezvous Services and
// EndpointSlices found by the job label in an index instead of a pass
// over every object the cache holds.
package kubeindex

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// Label returns an index function that files an object under the value
// of its label (an object without it, or with it empty, is not filed).
func Label(label string) cache.IndexFunc {
	return func(o any) ([]string, error) {
		m, err := meta.Accessor(o)
		if err != nil {
			return nil, nil //nolint:nilerr // not an object: filed nowhere
		}
		if v := m.GetLabels()[label]; v != "" {
			return []string{v}, nil
		}
		return nil, nil
	}
}

// Of returns the objects of type T that idx files under value in index.
func Of[T any](idx cache.Indexer, index, value string) ([]T, error) {
	objs, err := idx.ByIndex(index, value)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}
