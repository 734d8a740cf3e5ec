package store

import (
	"context"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// EventType says what happened to an object.
type EventType string

// Event types of a WatchEvent.
const (
	Added    EventType = "Added"
	Modified EventType = "Modified"
	Deleted  EventType = "Deleted"
	// Error events carry Err and are always the last event of a watch.
	Error EventType = "Error"
)

// WatchEvent is one change of a collection.
type WatchEvent[T any] struct {
	Type EventType
	// Name is the object's name.
	Name string
	// Object is the new value; for Deleted, the last value before deletion.
	Object T
	// Revision is the store revision of the change (the object's new mod
	// revision); resume a watch from it.
	Revision int64
	// Err is set on Error events. errors.Is(Err, ErrCompacted) means the
	// history needed is gone: List again and watch from the list's Revision.
	Err error
}

// Watch streams every change of the collection after store revision
// fromRevision (0: from now on), in revision order. The channel closes when
// ctx ends or after an Error event. Cancel ctx to stop the watch.
func (c *Collection[T]) Watch(ctx context.Context, fromRevision int64) <-chan WatchEvent[T] {
	out := make(chan WatchEvent[T], 64)
	opts := []clientv3.OpOption{
		clientv3.WithRange(clientv3.GetPrefixRangeEnd(c.dir)),
		clientv3.WithPrevKV(),
	}
	if fromRevision > 0 {
		opts = append(opts, clientv3.WithRev(fromRevision+1))
	}
	ctx, cancel := context.WithCancel(ctx)
	// Without a leader the member cannot tell whether it is stale: end the
	// watch so the caller resumes on a healthy member.
	wch := c.s.client.Watch(clientv3.WithRequireLeader(ctx), c.dir, opts...)
	go func() {
		defer close(out)
		defer cancel()
		for resp := range wch {
			for _, ev := range c.events(resp) {
				watchEvents.WithLabelValues(strings.ToLower(string(ev.Type))).Inc()
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
				if ev.Type == Error {
					return
				}
			}
		}
		if ctx.Err() == nil {
			select {
			case out <- WatchEvent[T]{Type: Error, Err: fmt.Errorf("store: watch %s: closed by the client", c.kind)}:
			case <-ctx.Done():
			}
		}
	}()
	return out
}

// events converts one etcd watch response; a failed response becomes a
// single Error event.
func (c *Collection[T]) events(resp clientv3.WatchResponse) []WatchEvent[T] {
	if resp.CompactRevision != 0 {
		return []WatchEvent[T]{{Type: Error, Revision: resp.CompactRevision,
			Err: fmt.Errorf("%w: watch %s: history starts at revision %d", ErrCompacted, c.kind, resp.CompactRevision)}}
	}
	if err := resp.Err(); err != nil {
		return []WatchEvent[T]{{Type: Error, Err: fmt.Errorf("store: watch %s: %w", c.kind, mapErr(err))}}
	}
	evs := make([]WatchEvent[T], 0, len(resp.Events))
	for _, e := range resp.Events {
		name := strings.TrimPrefix(string(e.Kv.Key), c.dir)
		ev := WatchEvent[T]{Name: name, Revision: e.Kv.ModRevision}
		val := e.Kv.Value
		switch {
		case e.Type == mvccpb.DELETE:
			ev.Type = Deleted
			if e.PrevKv != nil {
				val = e.PrevKv.Value
			}
		case e.IsCreate():
			ev.Type = Added
		default:
			ev.Type = Modified
		}
		obj, err := c.decode(name, val)
		if err != nil && !(ev.Type == Deleted && e.PrevKv == nil) {
			return append(evs, WatchEvent[T]{Type: Error, Name: name, Revision: ev.Revision, Err: err})
		}
		ev.Object = obj
		evs = append(evs, ev)
	}
	return evs
}
