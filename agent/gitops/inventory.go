// SPDX-License-Identifier: Apache-2.0

package gitops

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/fluxcd/cli-utils/pkg/object"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Keys of the inventory ConfigMap's data.
const (
	inventoryKeyEntries  = "entries"
	inventoryKeyRevision = "revision"
	inventoryKeyPath     = "path"
)

// entry is one object Shoal applied: its cli-utils ObjMetadata string
// ("namespace_name_group_kind") and API version.
type entry struct {
	ID      string `json:"id"`
	Version string `json:"v"`
}

// inventory is the set of objects Shoal applied from Git, kept in a
// ConfigMap in the agent's namespace so that prune survives agent restarts.
type inventory struct {
	// Revision and Path were last applied in full.
	Revision string
	Path     string
	Entries  map[string]entry // by ID
}

func inventoryOf(objs []*unstructured.Unstructured, revision, path string) inventory {
	inv := inventory{Revision: revision, Path: path, Entries: map[string]entry{}}
	for _, o := range objs {
		id := object.UnstructuredToObjMetadata(o).String()
		inv.Entries[id] = entry{ID: id, Version: o.GroupVersionKind().Version}
	}
	return inv
}

// union returns the entries of both inventories, with inv's revision and path.
func (inv inventory) union(other inventory) inventory {
	out := inventory{Revision: inv.Revision, Path: inv.Path, Entries: map[string]entry{}}
	for id, e := range other.Entries {
		out.Entries[id] = e
	}
	for id, e := range inv.Entries {
		out.Entries[id] = e
	}
	return out
}

// missingFrom returns, as deletable objects, the entries absent from next.
func (inv inventory) missingFrom(next inventory) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for id, e := range inv.Entries {
		if _, ok := next.Entries[id]; ok {
			continue
		}
		m, err := object.ParseObjMetadata(id)
		if err != nil {
			return nil, fmt.Errorf("inventory entry %q: %w", id, err)
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(m.GroupKind.WithVersion(e.Version))
		u.SetNamespace(m.Namespace)
		u.SetName(m.Name)
		out = append(out, u)
	}
	return out, nil
}

// ObjectRef names one Kubernetes object applied from Git.
type ObjectRef struct {
	Group     string
	Kind      string
	Namespace string
	Name      string
}

// String renders the ref as Kind/namespace/name (namespace omitted when
// empty), the form of v1alpha1.GitOpsStatus.Drifted.
func (o ObjectRef) String() string { return v1alpha1.GitOpsObjectName(o.Kind, o.Namespace, o.Name) }

func refOf(m object.ObjMetadata) ObjectRef {
	return ObjectRef{Group: m.GroupKind.Group, Kind: m.GroupKind.Kind, Namespace: m.Namespace, Name: m.Name}
}

// inventoryStore reads and writes the inventory ConfigMap.
type inventoryStore struct {
	client client.Client
	key    client.ObjectKey
}

func (s inventoryStore) load(ctx context.Context) (inventory, error) {
	inv := inventory{Entries: map[string]entry{}}
	var cm corev1.ConfigMap
	err := s.client.Get(ctx, s.key, &cm)
	if apierrors.IsNotFound(err) {
		return inv, nil
	}
	if err != nil {
		return inv, fmt.Errorf("read inventory %s: %w", s.key, err)
	}
	var entries []entry
	if err := json.Unmarshal([]byte(cm.Data[inventoryKeyEntries]), &entries); err != nil && cm.Data[inventoryKeyEntries] != "" {
		return inv, fmt.Errorf("decode inventory %s: %w", s.key, err)
	}
	for _, e := range entries {
		inv.Entries[e.ID] = e
	}
	inv.Revision, inv.Path = cm.Data[inventoryKeyRevision], cm.Data[inventoryKeyPath]
	return inv, nil
}

// save writes inv with server-side apply; an unchanged inventory is not
// rewritten, so a no-op sync writes nothing.
func (s inventoryStore) save(ctx context.Context, inv inventory, old inventory) error {
	if inv.sameApplied(old) && sameEntries(inv, old) {
		return nil
	}
	entries := make([]entry, 0, len(inv.Entries))
	for _, e := range inv.Entries {
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].ID < entries[j].ID })
	data, err := json.Marshal(entries)
	if err != nil {
		return err
	}
	cm := corev1ac.ConfigMap(s.key.Name, s.key.Namespace).
		WithLabels(map[string]string{"app.kubernetes.io/managed-by": FieldManager}).
		WithData(map[string]string{inventoryKeyEntries: string(data), inventoryKeyRevision: inv.Revision, inventoryKeyPath: inv.Path})
	if err := s.client.Apply(ctx, cm, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("write inventory %s: %w", s.key, err)
	}
	return nil
}

// sameApplied reports whether both name the same revision and path.
func (inv inventory) sameApplied(o inventory) bool {
	return inv.Revision == o.Revision && inv.Path == o.Path
}

func sameEntries(a, b inventory) bool {
	if len(a.Entries) != len(b.Entries) {
		return false
	}
	for id, e := range a.Entries {
		if b.Entries[id] != e {
			return false
		}
	}
	return true
}
