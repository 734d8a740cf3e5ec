// SPDX-License-Identifier: Apache-2.0

package queues

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/store"
)

// JobCounter counts a queue's non-terminal jobs (hub/jobs.Service implements it).
type JobCounter interface {
	ActiveJobs(ctx context.Context, queue string) (int, error)
}

// Service creates, updates, reads and deletes queues.
type Service struct {
	store  *store.Store
	queues *store.Collection[*v1alpha1.Queue]
	jobs   JobCounter
	clock  clock.PassiveClock
	// pools checks that the pools a queue names exist (nil: unchecked).
	pools func(ctx context.Context, names []string) error
}

// CheckPools makes Create and Update refuse a queue naming a GPU pool
// check says does not exist (hub/pools.Service.Exists).
func (s *Service) CheckPools(check func(ctx context.Context, names []string) error) { s.pools = check }

// checkPools refuses pools that do not exist.
func (s *Service) checkPools(ctx context.Context, q *v1alpha1.Queue) error {
	if s.pools == nil || len(q.Spec.Pools) == 0 {
		return nil
	}
	return s.pools(ctx, q.Spec.Pools)
}

// Option configures a Service.
type Option func(*Service)

// WithClock sets the clock for timestamps (tests).
func WithClock(c clock.PassiveClock) Option { return func(s *Service) { s.clock = c } }

// New returns a Service on st; jobs answers whether a queue is in use.
func New(st *store.Store, jobs JobCounter, opts ...Option) *Service {
	s := &Service{store: st, queues: NewCollection(st), jobs: jobs, clock: clock.RealClock{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// maxAttempts bounds the retries of a write that lost a race on a guard.
const maxAttempts = 8

// Create defaults, validates and stores a new queue, creating its missing
// ancestors. It returns store.ErrAlreadyExists when the name is taken.
func (s *Service) Create(ctx context.Context, q *v1alpha1.Queue) (*v1alpha1.Queue, int64, error) {
	q = prepare(q)
	if err := validate(q); err != nil {
		return nil, 0, err
	}
	if err := s.checkPools(ctx, q); err != nil {
		return nil, 0, err
	}
	now := metav1.NewTime(s.clock.Now())
	q.UID, q.CreationTimestamp, q.Generation = uuid.NewUUID(), now, 1
	for range maxAttempts {
		rev, err := s.tryCreate(ctx, q, now)
		if err == nil {
			return withRevision(q, rev), rev, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return nil, 0, err
		}
	}
	return nil, 0, fmt.Errorf("create queue %q: %w: ancestors kept changing", q.Name, store.ErrConflict)
}

// tryCreate writes q and its missing ancestors in one transaction guarded
// by the revisions of the ancestors read.
func (s *Service) tryCreate(ctx context.Context, q *v1alpha1.Queue, now metav1.Time) (int64, error) {
	txn := s.store.Txn(ctx).If(s.queues.Absent(q.Name))
	for _, name := range v1alpha1.QueueAncestors(q.Name) {
		anc, rev, err := s.queues.Get(ctx, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			txn.If(s.queues.Absent(name)).Then(s.queues.PutOp(name, implicitQueue(name, now)))
		case err != nil:
			return 0, err
		case anc.DeletionTimestamp != nil:
			return 0, errs.Precondition(fmt.Sprintf("parent queue %q is being deleted", name), "retry once it is gone")
		default:
			txn.If(s.queues.RevIs(name, rev))
		}
	}
	rev, err := txn.Then(s.queues.PutOp(q.Name, q)).Commit()
	if errors.Is(err, store.ErrConflict) {
		if _, _, gerr := s.queues.Get(ctx, q.Name); gerr == nil {
			return 0, errs.Of(store.ErrAlreadyExists, "queue %q already exists; `shoal queue get %s` shows it", q.Name, q.Name)
		}
	}
	return rev, err
}

func implicitQueue(name string, now metav1.Time) *v1alpha1.Queue {
	q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uuid.NewUUID(), CreationTimestamp: now,
		Generation: 1, Annotations: map[string]string{v1alpha1.AnnotationImplicit: "true"}}}
	v1alpha1.SetQueueDefaults(q)
	return q
}

// prepare copies q, drops what the client may not set and applies defaults.
func prepare(in *v1alpha1.Queue) *v1alpha1.Queue {
	q := &v1alpha1.Queue{TypeMeta: in.TypeMeta, Spec: in.Spec}
	q.Name, q.Labels, q.Annotations, q.Namespace = in.Name, in.Labels, in.Annotations, in.Namespace
	v1alpha1.SetQueueDefaults(q)
	return q
}

func validate(q *v1alpha1.Queue) error {
	return v1alpha1.NewInvalidError(v1alpha1.KindQueue, q.Name, v1alpha1.ValidateQueue(q))
}

// Update replaces a queue's spec, labels and annotations. A non-zero rev
// must be the queue's current revision (else store.ErrConflict); 0 updates
// whatever is stored.
func (s *Service) Update(ctx context.Context, in *v1alpha1.Queue, rev int64) (*v1alpha1.Queue, int64, error) {
	q := prepare(in)
	if err := validate(q); err != nil {
		return nil, 0, err
	}
	if err := s.checkPools(ctx, q); err != nil {
		return nil, 0, err
	}
	for range maxAttempts {
		cur, curRev, err := s.queues.Get(ctx, q.Name)
		if err != nil {
			return nil, 0, notFound(err, q.Name)
		}
		if rev != 0 && rev != curRev {
			return nil, 0, errs.Of(store.ErrConflict, "queue %q is at revision %d, not %d; get it again and reapply your change",
				q.Name, curRev, rev)
		}
		if cur.DeletionTimestamp != nil {
			return nil, 0, errs.Precondition(fmt.Sprintf("queue %q is being deleted", q.Name), "")
		}
		next := *cur
		next.Spec, next.Labels, next.Annotations, next.ResourceVersion = q.Spec, q.Labels, q.Annotations, ""
		next.Generation++
		newRev, err := s.queues.Update(ctx, q.Name, &next, curRev)
		if err == nil {
			return withRevision(&next, newRev), newRev, nil
		}
		if !errors.Is(err, store.ErrConflict) || rev != 0 {
			return nil, 0, err
		}
	}
	return nil, 0, fmt.Errorf("update queue %q: %w", q.Name, store.ErrConflict)
}

// Get returns a queue and its revision.
func (s *Service) Get(ctx context.Context, name string) (*v1alpha1.Queue, int64, error) {
	q, rev, err := s.queues.Get(ctx, name)
	if err != nil {
		return nil, 0, notFound(err, name)
	}
	return withRevision(q, rev), rev, nil
}

// List returns a page of queues sorted by name.
func (s *Service) List(ctx context.Context, opts store.ListOptions) ([]*v1alpha1.Queue, string, int64, error) {
	res, err := s.queues.List(ctx, opts)
	if err != nil {
		return nil, "", 0, err
	}
	out := make([]*v1alpha1.Queue, 0, len(res.Items))
	for _, it := range res.Items {
		out = append(out, withRevision(it.Object, it.Revision))
	}
	return out, res.Continue, res.Revision, nil
}
