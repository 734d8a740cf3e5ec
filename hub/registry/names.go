// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/shoal-dev/shoal/hub/store"
)

// allNames is the name of the one nameSet record.
const allNames = "all"

// nameSet lists every registered cluster name. Registrations and removals
// write it in their transaction, guarded by its revision, so two
// registrations of overlapping names cannot both commit.
type nameSet struct {
	Names []string `json:"names"`
}

// loadNames returns the name set and its revision; when the record does
// not exist yet (revision 0) it is built from the cluster records.
func (r *Registry) loadNames(ctx context.Context) (*nameSet, int64, error) {
	ns, rev, err := r.names.Get(ctx, allNames)
	if err == nil {
		return ns, rev, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, 0, err
	}
	res, err := r.clusters.List(ctx, store.ListOptions{})
	if err != nil {
		return nil, 0, err
	}
	ns = &nameSet{}
	for _, it := range res.Items {
		ns.Names = append(ns.Names, it.Name)
	}
	return ns, 0, nil
}

// conflict refuses a name that is taken, or that overlaps another
// cluster's: virtual nodes are named shoal-<cluster>-<pool>, so with
// clusters "a" and "a-b" the node prefix shoal-a- would cover both, and the
// hub-cluster admission policy tells clusters apart by that prefix.
func (ns *nameSet) conflict(name string) error {
	for _, m := range ns.Names {
		switch {
		case m == name:
			return fmt.Errorf("%w: %q: pick another --cluster-name or remove it first (shoal cluster remove %s)",
				ErrClusterExists, name, name)
		case strings.HasPrefix(m, name+"-") || strings.HasPrefix(name, m+"-"):
			return fmt.Errorf("%w: %q overlaps cluster %q (one name plus a dash starts the other, so their "+
				"virtual node names shoal-<cluster>-… would overlap): pick another --cluster-name", ErrClusterExists, name, m)
		}
	}
	return nil
}

func (ns *nameSet) with(name string) *nameSet {
	return &nameSet{Names: append(slices.Clone(ns.Names), name)}
}

func (ns *nameSet) without(name string) *nameSet {
	return &nameSet{Names: slices.DeleteFunc(slices.Clone(ns.Names), func(n string) bool { return n == name })}
}
