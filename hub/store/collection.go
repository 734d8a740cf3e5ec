// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shoal-dev/shoal/hub/store/migrate"
)

// electionsKind is reserved for Campaign's keys.
const electionsKind = "elections"

// Collection is the typed view of one kind of object: the keys
// <prefix><kind>/<name>. Every record it writes carries the kind's storage
// version and every record it reads is migrated to it first (package
// migrate).
type Collection[T any] struct {
	s      *Store
	kind   string
	dir    string // <prefix><kind>/
	codec  Codec[T]
	schema migrate.Schema
	// keysOnly lists keys without their values (a names-only view:
	// Reader.ListNames).
	keysOnly bool
}

// NewCollection returns the collection of kind (a non-empty word without
// "/") encoded with codec. It panics on an invalid kind: kinds are constants.
func NewCollection[T any](s *Store, kind string, codec Codec[T]) *Collection[T] {
	if kind == "" || kind == electionsKind || strings.ContainsAny(kind, "/\x00") {
		panic(fmt.Sprintf("store: invalid kind %q", kind))
	}
	return &Collection[T]{s: s, kind: kind, dir: s.prefix + kind + "/", codec: codec, schema: migrate.For(kind)}
}

// Kind is the collection's kind.
func (c *Collection[T]) Kind() string { return c.kind }

// Key is the etcd key of name.
func (c *Collection[T]) Key(name string) string { return c.dir + name }

func (c *Collection[T]) key(name string) (string, error) {
	if name == "" || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%w: %s %q", ErrInvalidName, c.kind, name)
	}
	return c.dir + name, nil
}

func (c *Collection[T]) decode(name string, b []byte) (obj T, err error) {
	if b, err = c.schema.Upgrade(b); err == nil {
		obj, err = c.codec.Unmarshal(b)
	}
	if err != nil {
		return obj, fmt.Errorf("store: decode %s %q: %w", c.kind, name, err)
	}
	return obj, nil
}

// Get returns the object and its mod revision, or ErrNotFound.
func (c *Collection[T]) Get(ctx context.Context, name string) (obj T, rev int64, err error) {
	defer observe("get", time.Now(), &err)
	return c.get(ctx, name)
}

// GetSerializable is Get as the local etcd member has applied it, without
// the quorum round of a linearizable read: it may miss a write another
// member has committed but this one not yet applied. For a reader that
// guards its write on the revision it read (RevIs), so that a stale read
// fails the write, which then reads again with Get.
func (c *Collection[T]) GetSerializable(ctx context.Context, name string) (obj T, rev int64, err error) {
	defer observe("get_serializable", time.Now(), &err)
	return c.get(ctx, name, clientv3.WithSerializable())
}

func (c *Collection[T]) get(ctx context.Context, name string, opts ...clientv3.OpOption) (obj T, rev int64, err error) {
	key, err := c.key(name)
	if err != nil {
		return obj, 0, err
	}
	resp, err := c.s.client.Get(ctx, key, opts...)
	if err != nil {
		return obj, 0, mapErr(err)
	}
	if len(resp.Kvs) == 0 {
		return obj, 0, fmt.Errorf("%w: %s %q", ErrNotFound, c.kind, name)
	}
	kv := resp.Kvs[0]
	obj, err = c.decode(name, kv.Value)
	return obj, kv.ModRevision, err
}

// Create stores a new object and returns its revision, or ErrAlreadyExists.
func (c *Collection[T]) Create(ctx context.Context, name string, obj T) (rev int64, err error) {
	defer observe("create", time.Now(), &err)
	key, val, err := c.encode(name, obj)
	if err != nil {
		return 0, err
	}
	resp, err := c.s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, val)).
		Commit()
	if err != nil {
		return 0, mapErr(err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("%w: %s %q", ErrAlreadyExists, c.kind, name)
	}
	return resp.Header.Revision, nil
}

// Update replaces an existing object if its mod revision is still
// expectedRev (0: whatever it is) and returns the new revision. It returns
// ErrNotFound when the object is gone and ErrConflict when it changed.
func (c *Collection[T]) Update(ctx context.Context, name string, obj T, expectedRev int64) (rev int64, err error) {
	defer observe("update", time.Now(), &err)
	key, val, err := c.encode(name, obj)
	if err != nil {
		return 0, err
	}
	resp, err := c.s.client.Txn(ctx).
		If(c.guard(key, expectedRev)).
		Then(clientv3.OpPut(key, val)).
		Else(clientv3.OpGet(key, clientv3.WithKeysOnly())).
		Commit()
	if err != nil {
		return 0, mapErr(err)
	}
	if !resp.Succeeded {
		return 0, c.guardFailure(name, resp)
	}
	return resp.Header.Revision, nil
}

// Delete removes the object if its mod revision is still expectedRev (0:
// unconditionally). It returns ErrNotFound or ErrConflict like Update.
func (c *Collection[T]) Delete(ctx context.Context, name string, expectedRev int64) (err error) {
	defer observe("delete", time.Now(), &err)
	key, err := c.key(name)
	if err != nil {
		return err
	}
	resp, err := c.s.client.Txn(ctx).
		If(c.guard(key, expectedRev)).
		Then(clientv3.OpDelete(key)).
		Else(clientv3.OpGet(key, clientv3.WithKeysOnly())).
		Commit()
	if err != nil {
		return mapErr(err)
	}
	if !resp.Succeeded {
		return c.guardFailure(name, resp)
	}
	return nil
}

// guard holds when key exists and, if rev is not 0, has mod revision rev.
func (c *Collection[T]) guard(key string, rev int64) clientv3.Cmp {
	if rev == 0 {
		return clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
	}
	return clientv3.Compare(clientv3.ModRevision(key), "=", rev)
}

// guardFailure tells apart a missing object from a changed one using the
// Else branch's keys-only Get.
func (c *Collection[T]) guardFailure(name string, resp *clientv3.TxnResponse) error {
	if len(resp.Responses) == 0 || len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
		return fmt.Errorf("%w: %s %q", ErrNotFound, c.kind, name)
	}
	cur := resp.Responses[0].GetResponseRange().Kvs[0].ModRevision
	return fmt.Errorf("%w: %s %q is at revision %d", ErrConflict, c.kind, name, cur)
}

func (c *Collection[T]) encode(name string, obj T) (key, val string, err error) {
	key, err = c.key(name)
	if err != nil {
		return "", "", err
	}
	b, err := c.codec.Marshal(obj)
	if err == nil {
		b, err = c.schema.Stamp(b)
	}
	if err != nil {
		return "", "", fmt.Errorf("store: encode %s %q: %w", c.kind, name, err)
	}
	return key, string(b), nil
}

// GuaranteedUpdate reads the object, applies fn and writes the result if
// nothing changed in between, retrying on conflicts until ctx ends. An error
// from fn is returned as is and nothing is written; a missing object is
// ErrNotFound (fn is not called). Guards (a leader's Leadership.Held) must
// hold for the write too: when one does not, ErrConflict is returned at
// once and nothing is written.
func (c *Collection[T]) GuaranteedUpdate(ctx context.Context, name string, fn func(T) (T, error), guards ...Cond) (T, int64, error) {
	for {
		cur, rev, err := c.Get(ctx, name)
		if err != nil {
			return cur, 0, err
		}
		next, err := fn(cur)
		if err != nil {
			return cur, rev, err
		}
		newRev, err := c.update(ctx, name, next, rev, guards)
		if err == nil {
			return next, newRev, nil
		}
		if !errors.Is(err, ErrConflict) || ctx.Err() != nil {
			var zero T
			return zero, 0, err
		}
		if len(guards) > 0 {
			if _, gerr := c.s.Txn(ctx).If(guards...).Commit(); gerr != nil {
				var zero T
				return zero, 0, gerr // a guard failed, not the revision: retrying cannot help
			}
		}
	}
}

// update is Update with guards that must hold too (a leader's Held).
func (c *Collection[T]) update(ctx context.Context, name string, obj T, rev int64, guards []Cond) (int64, error) {
	if len(guards) == 0 {
		return c.Update(ctx, name, obj, rev)
	}
	return c.s.Txn(ctx).If(append([]Cond{c.RevIs(name, rev)}, guards...)...).Then(c.PutOp(name, obj)).Commit()
}
