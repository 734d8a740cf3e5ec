// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// getAtBatch is how many reads one GetAt transaction holds (below the
// embedded etcd's MaxTxnOps and etcd's own default of 128).
const getAtBatch = 128

// GetAt returns the named objects as they were at store revision rev (one
// consistent view however many transactions it takes), in the order of
// names; names absent at rev are left out. For a reader that picked names
// from a cache of its own (hub/jobs' list index) and needs their values at
// the cache's revision. A revision older than the compaction fails with
// ErrCompacted.
func (c *Collection[T]) GetAt(ctx context.Context, names []string, rev int64) (out []Item[T], err error) {
	defer observe("getat", time.Now(), &err)
	out = make([]Item[T], 0, len(names))
	for len(names) > 0 {
		n := min(len(names), getAtBatch)
		resp, err := c.getAt(ctx, names[:n], rev, true)
		if errors.Is(err, rpctypes.ErrFutureRev) { // this member has not applied rev yet
			resp, err = c.getAt(ctx, names[:n], rev, false)
		}
		if err != nil {
			return nil, mapErr(err)
		}
		for _, r := range resp.Responses {
			for _, kv := range r.GetResponseRange().GetKvs() {
				name := strings.TrimPrefix(string(kv.Key), c.dir)
				obj, err := c.decode(name, kv.Value)
				if err != nil {
					return nil, err
				}
				out = append(out, Item[T]{Name: name, Object: obj, Revision: kv.ModRevision})
			}
		}
		names = names[n:]
	}
	return out, nil
}

// getAt reads names at rev in one transaction. serializable skips the
// quorum round (a revision the caller saw is already committed): about
// 25 ms less per transaction on the embedded etcd.
func (c *Collection[T]) getAt(ctx context.Context, names []string, rev int64, serializable bool) (*clientv3.TxnResponse, error) {
	ops := make([]clientv3.Op, 0, len(names))
	for _, name := range names {
		key, err := c.key(name)
		if err != nil {
			return nil, err
		}
		opts := []clientv3.OpOption{clientv3.WithRev(rev)}
		if serializable {
			opts = append(opts, clientv3.WithSerializable())
		}
		ops = append(ops, clientv3.OpGet(key, opts...))
	}
	return c.s.client.Txn(ctx).Then(ops...).Commit()
}
