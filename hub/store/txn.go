// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Cond is a guard of a Txn, built by a Collection (RevIs, Exists, Absent).
type Cond struct {
	cmp clientv3.Cmp
	err error
}

// Op is a write of a Txn, built by a Collection (PutOp, DeleteOp).
type Op struct {
	op  clientv3.Op
	err error
}

// RevIs holds when the object's mod revision is rev; rev 0 means the object
// does not exist.
func (c *Collection[T]) RevIs(name string, rev int64) Cond {
	key, err := c.key(name)
	if rev == 0 {
		return Cond{cmp: clientv3.Compare(clientv3.CreateRevision(key), "=", 0), err: err}
	}
	return Cond{cmp: clientv3.Compare(clientv3.ModRevision(key), "=", rev), err: err}
}

// Absent holds when the object does not exist.
func (c *Collection[T]) Absent(name string) Cond { return c.RevIs(name, 0) }

// Exists holds when the object exists, whatever its revision.
func (c *Collection[T]) Exists(name string) Cond {
	key, err := c.key(name)
	return Cond{cmp: clientv3.Compare(clientv3.CreateRevision(key), ">", 0), err: err}
}

// PutOp writes obj under name (creating or replacing it).
func (c *Collection[T]) PutOp(name string, obj T) Op {
	key, val, err := c.encode(name, obj)
	return Op{op: clientv3.OpPut(key, val), err: err}
}

// DeleteOp deletes name; deleting a missing object is not an error.
func (c *Collection[T]) DeleteOp(name string) Op {
	key, err := c.key(name)
	return Op{op: clientv3.OpDelete(key), err: err}
}

// Txn is an atomic multi-key write: Then's operations are applied, at one
// new revision, only if every If guard holds. Build it with Store.Txn.
type Txn struct {
	s     *Store
	ctx   context.Context
	conds []Cond
	ops   []Op
}

// Txn starts a transaction.
func (s *Store) Txn(ctx context.Context) *Txn { return &Txn{s: s, ctx: ctx} }

// If adds guards; all of them must hold.
func (t *Txn) If(conds ...Cond) *Txn {
	t.conds = append(t.conds, conds...)
	return t
}

// Then adds writes.
func (t *Txn) Then(ops ...Op) *Txn {
	t.ops = append(t.ops, ops...)
	return t
}

// Commit applies the transaction and returns its revision. It returns
// ErrConflict, and writes nothing, when a guard does not hold.
func (t *Txn) Commit() (rev int64, err error) {
	defer observe("txn", time.Now(), &err)
	cmps := make([]clientv3.Cmp, 0, len(t.conds))
	ops := make([]clientv3.Op, 0, len(t.ops))
	var errs []error
	for _, c := range t.conds {
		cmps = append(cmps, c.cmp)
		errs = append(errs, c.err)
	}
	for _, o := range t.ops {
		ops = append(ops, o.op)
		errs = append(errs, o.err)
	}
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	resp, err := t.s.client.Txn(t.ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return 0, mapErr(err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("%w: transaction guard failed", ErrConflict)
	}
	return resp.Header.Revision, nil
}
