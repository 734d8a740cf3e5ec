// SPDX-License-Identifier: Apache-2.0

package main

import (
	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// byName indexes queues by name.
func byName(qs []*v1alpha1.Queue) map[string]*v1alpha1.Queue {
	out := make(map[string]*v1alpha1.Queue, len(qs))
	for _, q := range qs {
		out[q.Name] = q
	}
	return out
}

// queueAncestors returns qs and their ancestors by name, reading the
// ancestors qs lack from the hub (a missing one is left out).
func queueAncestors(cmd *cobra.Command, cl shoalv1.QueuesClient, qs []*v1alpha1.Queue) (map[string]*v1alpha1.Queue, error) {
	tree := byName(qs)
	for _, q := range qs {
		for _, a := range v1alpha1.QueueAncestors(q.Name) {
			if _, ok := tree[a]; ok {
				continue
			}
			obj, err := cl.Get(cmd.Context(), &shoalv1.GetQueueRequest{Name: a})
			if status.Code(err) == codes.NotFound {
				continue
			}
			if err != nil {
				return nil, outCallError("get queue/"+a, err)
			}
			anc, err := decodeQueueObject(obj)
			if err != nil {
				return nil, err
			}
			tree[a] = anc
		}
	}
	return tree, nil
}

// effectivePodSecurity renders the pod-security level that applies to queue
// name (v1alpha1.EffectivePodSecurity along its path in tree): "restricted",
// with "(from a)" when an ancestor set it, "(default)" when none did.
func effectivePodSecurity(tree map[string]*v1alpha1.Queue, name string) string {
	path := append(v1alpha1.QueueAncestors(name), name)
	levels := make([]v1alpha1.PodSecurityLevel, len(path))
	for i, n := range path {
		if q := tree[n]; q != nil {
			levels[i] = q.Spec.PodSecurity
		}
	}
	l, from := v1alpha1.EffectivePodSecurity(levels...)
	switch {
	case from < 0:
		return string(l) + " (default)"
	case path[from] != name:
		return string(l) + " (from " + path[from] + ")"
	}
	return string(l)
}

// effectivePools renders the GPU pools queue name's jobs may use
// (v1alpha1.EffectivePools along its path in tree): "a,b", with "(from x)"
// when an ancestor names them, "-" when none does.
func effectivePools(tree map[string]*v1alpha1.Queue, name string) string {
	from := ""
	pools := v1alpha1.EffectivePools(name, func(n string) (*v1alpha1.QueueSpec, bool) {
		q := tree[n]
		if q == nil {
			return nil, false
		}
		if from == "" && len(q.Spec.Pools) > 0 {
			from = n
		}
		return &q.Spec, true
	})
	s := outJoin(pools)
	if len(pools) > 0 && from != name {
		s += " (from " + from + ")"
	}
	return s
}
