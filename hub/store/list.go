// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ListOptions selects a page of a List.
type ListOptions struct {
	// Limit is the page size; 0 lists everything.
	Limit int64
	// Continue is the token of the previous page's ListResult.
	Continue string
	// Revision lists the objects as they were at that store revision
	// (0: now). Ignored with Continue, which carries its own revision.
	Revision int64
	// After starts the list after that name (ignored with Continue): for a
	// caller that keeps its own cursor (hub/jobs).
	After string
}

// Item is one listed object.
type Item[T any] struct {
	// Name is the object's name within its kind.
	Name string
	// Object is the decoded value.
	Object T
	// Revision is the object's mod revision, for Update and Txn guards.
	Revision int64
}

// ListResult is one page of a List.
type ListResult[T any] struct {
	// Items are sorted by name.
	Items []Item[T]
	// Continue fetches the next page at the same Revision; "" on the last page.
	Continue string
	// Revision is the store revision the page was read at; pass it to Watch
	// to follow changes after the list.
	Revision int64
}

// continueToken is the decoded form of ListResult.Continue.
type continueToken struct {
	Kind     string `json:"k"`
	Revision int64  `json:"r"`
	Start    string `json:"s"` // the first name of the next page
}

// fullListChunk is the page size List uses internally for Limit 0, so no
// etcd response grows with the collection (etcd's and gRPC's message limits).
const fullListChunk = 1000

// List returns objects sorted by name, a page at a time (Limit 0: all of
// them, read internally in chunks). All pages of one listing are read at
// the same revision; when etcd has compacted it, the continued List fails
// with ErrCompacted and the caller starts over.
func (c *Collection[T]) List(ctx context.Context, opts ListOptions) (res ListResult[T], err error) {
	defer observe("list", time.Now(), &err)
	start, rev := c.dir, opts.Revision
	if opts.After != "" {
		start = c.dir + opts.After + "\x00"
	}
	if opts.Continue != "" {
		tok, err := c.decodeContinue(opts.Continue)
		if err != nil {
			return res, err
		}
		start, rev = c.dir+tok.Start, tok.Revision
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = fullListChunk
	}
	for {
		next, err := c.listPage(ctx, &res, start, rev, limit)
		if err != nil {
			return ListResult[T]{}, err
		}
		rev = res.Revision
		if next == "" {
			return res, nil
		}
		if opts.Limit > 0 {
			res.Continue = c.encodeContinue(continueToken{Kind: c.kind, Revision: rev, Start: next})
			return res, nil
		}
		start = c.dir + next
	}
}

// listPage appends up to limit objects from key start at revision rev (0:
// now) to res, sets res.Revision and returns the name to continue from
// ("" when done).
func (c *Collection[T]) listPage(ctx context.Context, res *ListResult[T], start string, rev, limit int64) (string, error) {
	ops := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(c.dir)), clientv3.WithLimit(limit)}
	if rev > 0 {
		ops = append(ops, clientv3.WithRev(rev))
	}
	if c.keysOnly {
		ops = append(ops, clientv3.WithKeysOnly())
	}
	resp, err := c.s.client.Get(ctx, start, ops...)
	if err != nil {
		return "", mapErr(err)
	}
	res.Revision = resp.Header.Revision
	if rev > 0 {
		res.Revision = rev
	}
	if res.Items == nil {
		res.Items = make([]Item[T], 0, len(resp.Kvs))
	}
	for _, kv := range resp.Kvs {
		name := strings.TrimPrefix(string(kv.Key), c.dir)
		obj, err := c.decode(name, kv.Value)
		if err != nil {
			return "", err
		}
		res.Items = append(res.Items, Item[T]{Name: name, Object: obj, Revision: kv.ModRevision})
	}
	if !resp.More || len(resp.Kvs) == 0 {
		return "", nil
	}
	return res.Items[len(res.Items)-1].Name + "\x00", nil
}

// Newest is a kind NewestRevisions reads: a Collection or a Reader.
type Newest interface {
	// storeDir is the kind's store and key prefix.
	storeDir() (*Store, string)
}

func (c *Collection[T]) storeDir() (*Store, string) { return c.s, c.dir }

func (r Reader[T]) storeDir() (*Store, string) { return r.c.storeDir() }

// NewestRevisions is the newest mod revision among the objects of each
// kind (0: none), in the order given, read without reading or decoding any
// object (a sorted, keys-only range of limit 1 per kind) in one
// transaction: one round
// trip for all the kinds (a scheduling cycle reads three). The kinds must
// be of one Store. The answer holds every write acknowledged before the
// call, to any client: on an etcd cluster the read takes the quorum round
// (linearizable); on the embedded etcd, a single member that answers a
// write only once it has applied it, it reads what the member has applied
// (serializable) and skips that round — about 25 ms on the embedded etcd
// (Collection.getAt), more when it is busy.
func NewestRevisions(ctx context.Context, kinds ...Newest) (revs []int64, err error) {
	defer observe("list", time.Now(), &err)
	if len(kinds) == 0 {
		return nil, nil
	}
	var s *Store
	ops := make([]clientv3.Op, len(kinds))
	for i, k := range kinds {
		ks, dir := k.storeDir()
		if s != nil && ks != s {
			return nil, errors.New("store: NewestRevisions of kinds of different stores")
		}
		s = ks
		opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(dir)),
			clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend), clientv3.WithLimit(1), clientv3.WithKeysOnly()}
		if s.server != nil {
			opts = append(opts, clientv3.WithSerializable())
		}
		ops[i] = clientv3.OpGet(dir, opts...)
	}
	resp, err := s.client.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, mapErr(err)
	}
	revs = make([]int64, len(kinds))
	for i, r := range resp.Responses {
		if kvs := r.GetResponseRange().GetKvs(); len(kvs) > 0 {
			revs[i] = kvs[0].ModRevision
		}
	}
	return revs, nil
}

func (c *Collection[T]) encodeContinue(tok continueToken) string {
	b, _ := json.Marshal(tok) // a struct of strings and ints always marshals
	return base64.RawURLEncoding.EncodeToString(b)
}

func (c *Collection[T]) decodeContinue(s string) (continueToken, error) {
	var tok continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &tok)
	}
	if err == nil && (tok.Kind != c.kind || tok.Revision <= 0) {
		err = fmt.Errorf("token is for %s at revision %d", tok.Kind, tok.Revision)
	}
	if err != nil {
		return tok, fmt.Errorf("%w: continue token: %v", ErrInvalidContinue, err)
	}
	return tok, nil
}
