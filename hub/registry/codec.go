// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"encoding/json"

	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/hub/store/migrate"
)

// gzipJSON stores inventories as gzipped JSON: a 5,000-node inventory is
// about 950 KB of JSON, close to etcd's default 1.5 MiB request limit, and
// 25 KB gzipped. Values that are not gzipped are read as plain JSON (what
// the store hands over after migrating a gzipped record).
type gzipJSON[T any] struct{}

func (gzipJSON[T]) Marshal(v T) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	// Stamped before compressing: the store then finds the version in the
	// first bytes instead of compressing the record again to add it.
	if raw, err = migrate.For(KindInventories).Stamp(raw); err != nil {
		return nil, err
	}
	return migrate.Gzip(raw)
}

func (gzipJSON[T]) Unmarshal(data []byte) (T, error) {
	var v T
	if migrate.IsGzip(data) {
		raw, err := migrate.Gunzip(data)
		if err != nil {
			return v, err
		}
		data = raw
	}
	err := store.DecodeJSON(data, &v)
	return v, err
}

// InventoryCodec is the codec of the registry's inventory records
// (KindInventories): gzipped JSON, plain JSON read too. Other hub packages
// that read the inventories straight from the store (the scheduler) use it
// instead of copying it.
func InventoryCodec() store.Codec[*InventoryRecord] { return gzipJSON[*InventoryRecord]{} }

// NewInventoryCollection returns the registry's inventory collection on st,
// for readers outside the registry. Only the registry writes it.
func NewInventoryCollection(st *store.Store) *store.Collection[*InventoryRecord] {
	return store.NewCollection(st, KindInventories, InventoryCodec())
}
