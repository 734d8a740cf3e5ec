// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"
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
	// Progress events (only from WatchProgress) carry no object: every
	// change up to Revision was delivered before them.
	Progress EventType = "Progress"
)

// WatchEvent is one change of a collection.
type WatchEvent[T any] struct {
	Type EventType
	// Name is the object's name.
	Name string
	// Object is the new value; for Deleted, the last value before deletion.
	Object T
	// Revision is the store revision of the change (the object's new mod
	// revision); resume a watch from it. A Txn's writes share one revision:
	// resume from it only after handling all events of that revision.
	Revision int64
	// More says that more events of the same Revision follow: the writes
	// of one Txn (etcd sends a revision's events together, and Watch sends
	// them one after the other). A cache fed by the watch holds every
	// change up to Revision only once it applied the event without More;
	// one that called itself current to Revision after the first event of
	// a transaction of 15 bookings let a scheduling cycle decide without
	// the other 14 and book their GPUs again (docs/scale.md, session 30).
	More bool
	// Err is set on Error events. errors.Is(Err, ErrCompacted) means the
	// history needed is gone: List again and watch from the list's Revision.
	Err error
}

// errWatchInterrupted marks watch failures that a new watch from the last
// delivered revision recovers from (lost leader, member down).
var errWatchInterrupted = errors.New("watch interrupted")

// Watch streams every change of the collection after store revision
// fromRevision (0: from now on), in revision order, without gaps or
// duplicates. A watch from now starts at the store's revision as Watch
// returns: every change committed after the call returned is delivered,
// so a caller that says the watch is open once it returns (the API's
// Watch answers its headers then) does not miss a write made next. When
// the etcd member serving it fails or loses its leader,
// the watch resumes on its own from the last delivered revision. The
// channel closes when ctx ends or after an Error event: the history was
// compacted (ErrCompacted), a value could not be decoded, or the store was
// closed.
func (c *Collection[T]) Watch(ctx context.Context, fromRevision int64) <-chan WatchEvent[T] {
	return c.watch(ctx, fromRevision, false)
}

// WatchProgress is Watch that also delivers Progress events, in order with
// the changes, after each call of request: a cache fed by the watch knows
// it holds every change up to a revision (as kube-apiserver's consistent
// reads from its watch cache do). request may be called any time; a
// request made while etcd still sends older history is answered later or
// not at all, so callers ask again when they wait too long.
//
// The watch runs on a gRPC watch stream of its own (progressStream): etcd
// answers a progress request only once every watcher of the stream has
// caught up, and on the stream the hub's other watches share (the
// scheduler's caches, the dispatcher's, the registry's: inventories among
// them) one that lags under a burst of writes holds every answer back.
func (c *Collection[T]) WatchProgress(ctx context.Context, fromRevision int64) (events <-chan WatchEvent[T], request func() error) {
	ctx = progressStream(ctx, c.kind)
	return c.watch(ctx, fromRevision, true), func() error {
		return mapErr(c.s.client.RequestProgress(clientv3.WithRequireLeader(ctx)))
	}
}

// progressStream returns ctx marked so that the etcd watches made with it
// (and their progress requests) share a gRPC stream only with others
// marked with the same name: the etcd client keys its watch streams by
// the call's outgoing metadata.
func progressStream(ctx context.Context, name string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "shoal-watch-stream", name)
}

func (c *Collection[T]) watch(ctx context.Context, fromRevision int64, progress bool) <-chan WatchEvent[T] {
	out := make(chan WatchEvent[T], 64)
	last := fromRevision
	var startErr error
	if last == 0 { // now, before returning (Watch)
		last, startErr = c.s.Revision(ctx)
	}
	go func() {
		defer close(out)
		if startErr != nil {
			c.send(ctx, out, WatchEvent[T]{Type: Error, Err: fmt.Errorf("store: watch %s: %w", c.kind, startErr)})
			return
		}
		backoff := 50 * time.Millisecond
		for ctx.Err() == nil {
			delivered, err := c.watchOnce(ctx, out, last, progress)
			if !errors.Is(err, errWatchInterrupted) {
				if err != nil {
					c.send(ctx, out, WatchEvent[T]{Type: Error, Revision: delivered, Err: err})
				}
				return
			}
			if delivered > last { // made progress: retry quickly again
				backoff = 50 * time.Millisecond
			}
			last = delivered
			watchRestarts.Inc()
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			backoff = min(2*backoff, 2*time.Second)
		}
	}()
	return out
}

// watchOnce runs one etcd watch from after revision last and returns the
// last delivered revision and why it ended (nil: ctx ended).
func (c *Collection[T]) watchOnce(ctx context.Context, out chan<- WatchEvent[T], last int64, progress bool) (int64, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Without a leader a member cannot tell whether it is stale: end the
	// watch there and resume on a healthy member.
	wch := c.s.client.Watch(clientv3.WithRequireLeader(wctx), c.dir,
		clientv3.WithRange(clientv3.GetPrefixRangeEnd(c.dir)), clientv3.WithPrevKV(), clientv3.WithRev(last+1))
	for resp := range wch {
		if resp.CompactRevision != 0 {
			return last, fmt.Errorf("%w: watch %s from revision %d: history starts at %d", ErrCompacted, c.kind, last+1, resp.CompactRevision)
		}
		if err := resp.Err(); err != nil {
			if ctx.Err() != nil {
				return last, nil
			}
			return last, fmt.Errorf("store: watch %s: %w: %w", c.kind, errWatchInterrupted, err)
		}
		if progress && resp.IsProgressNotify() {
			rev := max(last, resp.Header.Revision)
			if !c.send(ctx, out, WatchEvent[T]{Type: Progress, Revision: rev}) {
				return last, nil
			}
			last = rev
			continue
		}
		for i, e := range resp.Events {
			ev, err := c.event(e)
			if err != nil {
				return last, err
			}
			// etcd never splits a revision's events over responses (its
			// watch batches end between revisions; this watch asks for no
			// fragments).
			ev.More = i+1 < len(resp.Events) && resp.Events[i+1].Kv.ModRevision == e.Kv.ModRevision
			if !c.send(ctx, out, ev) {
				return last, nil
			}
			last = ev.Revision
		}
	}
	switch {
	case ctx.Err() != nil:
		return last, nil
	case c.s.client.Ctx().Err() != nil:
		return last, fmt.Errorf("store: watch %s: store closed", c.kind)
	default:
		return last, fmt.Errorf("store: watch %s: %w: channel closed", c.kind, errWatchInterrupted)
	}
}

// send delivers ev unless ctx ends first.
func (c *Collection[T]) send(ctx context.Context, out chan<- WatchEvent[T], ev WatchEvent[T]) bool {
	select {
	case out <- ev:
		watchEvents.WithLabelValues(strings.ToLower(string(ev.Type))).Inc()
		return true
	case <-ctx.Done():
		return false
	}
}

// event converts one etcd event.
func (c *Collection[T]) event(e *clientv3.Event) (WatchEvent[T], error) {
	name := strings.TrimPrefix(string(e.Kv.Key), c.dir)
	ev := WatchEvent[T]{Name: name, Revision: e.Kv.ModRevision}
	val := e.Kv.Value
	switch {
	case e.Type == mvccpb.DELETE:
		ev.Type = Deleted
		if e.PrevKv == nil { // the previous value was compacted away
			return ev, nil
		}
		val = e.PrevKv.Value
	case e.IsCreate():
		ev.Type = Added
	default:
		ev.Type = Modified
	}
	obj, err := c.decode(name, val)
	if err != nil {
		return ev, err
	}
	ev.Object = obj
	return ev, nil
}

// Notify calls poke for every event on ch until ctx ends or ch closes; for
// loops that re-read state on any change rather than apply each event.
func Notify[T any](ctx context.Context, ch <-chan WatchEvent[T], poke func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
			poke()
		}
	}
}
