// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"sync"

	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/hub/store/migrate"
)

// gzipJSON stores inventories as gzipped JSON: a 5,000-node inventory is
// about 950 KB of JSON, close to etcd's default 1.5 MiB request limit, and
// 25 KB gzipped. Values that are not gzipped are read as plain JSON (what
// the store hands over after migrating a gzipped record).
type gzipJSON[T any] struct{}

// gzipWriters and gzipReaders keep compressors and decompressors between
// records: a compressor is about 1 MB of state, and a new one for every
// inventory stored was a twentieth of what the hub allocated in the
// 10-cluster load run (docs/scale.md, "Session 23").
var (
	gzipWriters = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // a valid level: no error
		return w
	}}
	gzipReaders sync.Pool // *gzip.Reader
)

// maxSizeHint bounds the buffer a gzipped record's stated size reserves
// (it is read from the record, checked only as the record decompresses).
const maxSizeHint = 64 << 20

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
	var b bytes.Buffer
	w := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(w)
	w.Reset(&b)
	if _, err := w.Write(raw); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (gzipJSON[T]) Unmarshal(data []byte) (T, error) {
	var v T
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		raw, err := gunzip(data)
		if err != nil {
			return v, err
		}
		data = raw
	}
	err := store.DecodeJSON(data, &v)
	return v, err
}

// gunzip decompresses a gzipped record into a buffer of the size its
// trailer states (the uncompressed size modulo 2³², bounded), with a
// pooled decompressor.
func gunzip(data []byte) ([]byte, error) {
	var err error
	r, _ := gzipReaders.Get().(*gzip.Reader)
	if r == nil {
		r, err = gzip.NewReader(bytes.NewReader(data))
	} else {
		err = r.Reset(bytes.NewReader(data))
	}
	if err != nil {
		return nil, err
	}
	defer gzipReaders.Put(r)
	hint := 0
	if len(data) >= 18 { // a header of 10 bytes, a trailer of 8
		hint = int(min(binary.LittleEndian.Uint32(data[len(data)-4:]), maxSizeHint))
	}
	out := bytes.NewBuffer(make([]byte, 0, hint+bytes.MinRead)) // ReadFrom wants MinRead spare before EOF
	if _, err := out.ReadFrom(r); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
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
