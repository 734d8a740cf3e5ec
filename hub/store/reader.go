// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
)

// Reader is the read-only view of one kind for packages that do not own it:
// Get, List, Watch and the guards of a Txn, never a write. A kind's owner
// constructs its writable Collection and hands out Readers (Collection.Reader);
// anyone may open one with NewReader. A Reader cannot be turned back into its
// Collection.
type Reader[T any] struct {
	c *Collection[T]
}

// NewReader returns a read-only view of kind encoded with codec. It panics on
// an invalid kind, like NewCollection.
func NewReader[T any](s *Store, kind string, codec Codec[T]) Reader[T] {
	return Reader[T]{c: NewCollection(s, kind, codec)}
}

// WatchNames streams the changes after fromRevision like Watch, naming
// the objects changed without decoding them (Object is always zero): for a
// watcher that only needs to know which objects to look at again.
func (r Reader[T]) WatchNames(ctx context.Context, fromRevision int64) <-chan WatchEvent[struct{}] {
	names := &Collection[struct{}]{s: r.c.s, kind: r.c.kind, dir: r.c.dir, codec: namesCodec{}}
	return names.Watch(ctx, fromRevision)
}

// ListNames lists the names of every object of the kind with their mod
// revisions (Object is always zero), read keys-only (no value is read or
// decoded), sorted by name, at store revision rev (0: now): the result's
// Revision, to watch from (WatchNames) for a set of names kept current.
func (r Reader[T]) ListNames(ctx context.Context, rev int64) (ListResult[struct{}], error) {
	names := &Collection[struct{}]{s: r.c.s, kind: r.c.kind, dir: r.c.dir, codec: namesCodec{}, keysOnly: true}
	return names.List(ctx, ListOptions{Revision: rev})
}

// namesCodec decodes nothing (WatchNames); it encodes nothing either.
type namesCodec struct{}

func (namesCodec) Marshal(struct{}) ([]byte, error) {
	return nil, errors.New("store: a names-only view writes nothing")
}

func (namesCodec) Unmarshal([]byte) (struct{}, error) { return struct{}{}, nil }

// Reader returns the read-only view of the collection.
func (c *Collection[T]) Reader() Reader[T] { return Reader[T]{c: c} }

// Kind is the kind read.
func (r Reader[T]) Kind() string { return r.c.kind }

// Get returns the object and its mod revision, or ErrNotFound.
func (r Reader[T]) Get(ctx context.Context, name string) (T, int64, error) { return r.c.Get(ctx, name) }

// GetSerializable is Get without the quorum round; see
// Collection.GetSerializable.
func (r Reader[T]) GetSerializable(ctx context.Context, name string) (T, int64, error) {
	return r.c.GetSerializable(ctx, name)
}

// List returns a page of objects sorted by name; see Collection.List.
func (r Reader[T]) List(ctx context.Context, opts ListOptions) (ListResult[T], error) {
	return r.c.List(ctx, opts)
}

// Watch streams the changes after fromRevision; see Collection.Watch.
func (r Reader[T]) Watch(ctx context.Context, fromRevision int64) <-chan WatchEvent[T] {
	return r.c.Watch(ctx, fromRevision)
}

// RevIs is the Txn guard that holds when name's mod revision is rev (0: absent).
func (r Reader[T]) RevIs(name string, rev int64) Cond { return r.c.RevIs(name, rev) }

// Exists is the Txn guard that holds when name exists.
func (r Reader[T]) Exists(name string) Cond { return r.c.Exists(name) }

// Absent is the Txn guard that holds when name does not exist.
func (r Reader[T]) Absent(name string) Cond { return r.c.Absent(name) }

// WatchProgress is Watch with Progress events on request; see
// Collection.WatchProgress.
func (r Reader[T]) WatchProgress(ctx context.Context, fromRevision int64) (<-chan WatchEvent[T], func() error) {
	return r.c.WatchProgress(ctx, fromRevision)
}

// GetAt returns the named objects as they were at store revision rev; see
// Collection.GetAt.
func (r Reader[T]) GetAt(ctx context.Context, names []string, rev int64) ([]Item[T], error) {
	return r.c.GetAt(ctx, names, rev)
}
