// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"errors"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/store"
)

// Kind is the store kind of Job records.
const Kind = "jobs"

// TemplateValidator checks a job's pod template with the real Kubernetes
// validator (a server-side dry-run on the hub cluster). It returns a
// *v1alpha1.InvalidError, with paths relative to the template, when the
// template is rejected; any other error means it could not check.
type TemplateValidator interface {
	Validate(ctx context.Context, t *corev1.PodTemplateSpec) error
}

// Service is the job intake.
type Service struct {
	store     *store.Store
	jobs      *store.Collection[*v1alpha1.Job]
	index     store.Reader[*indexed]
	queues    store.Reader[*v1alpha1.Queue]
	validator TemplateValidator
	refs      ReferenceChecker
	clock     clock.PassiveClock
	// listIndex, when set, serves filtered lists (listindex.go), whose
	// jobs are read through raw.
	listIndex *ListIndex
	raw       store.Reader[*indexed]
	// beforeWrite, when set (tests), runs after a submission's jobs were
	// admitted and before they are written.
	beforeWrite func()
}

// Option configures a Service.
type Option func(*Service)

// WithTemplateValidator checks every submitted pod template with v.
func WithTemplateValidator(v TemplateValidator) Option { return func(s *Service) { s.validator = v } }

// WithReferenceChecker checks, with c, that the objects every submitted pod
// template references exist (jobs without references are not checked).
func WithReferenceChecker(c ReferenceChecker) Option { return func(s *Service) { s.refs = c } }

// WithClock sets the clock for timestamps (tests).
func WithClock(c clock.PassiveClock) Option { return func(s *Service) { s.clock = c } }

// New returns the job intake on st.
func New(st *store.Store, opts ...Option) *Service {
	s := &Service{
		store:  st,
		jobs:   newCollection(st),
		index:  newIndexReader(st),
		raw:    store.NewReader[*indexed](st, Kind, rawCodec{}),
		queues: store.NewReader(st, queues.Kind, store.JSONCodec[*v1alpha1.Queue]()),
		clock:  clock.RealClock{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// newCollection returns the writable store collection of Jobs; only this
// package has one (others get a Reader).
func newCollection(st *store.Store) *store.Collection[*v1alpha1.Job] {
	return store.NewCollection(st, Kind, store.JSONCodec[*v1alpha1.Job]())
}

// Get returns a job and its revision.
func (s *Service) Get(ctx context.Context, name string) (*v1alpha1.Job, int64, error) {
	j, rev, err := s.jobs.Get(ctx, name)
	if err != nil {
		return nil, 0, notFound(err, name)
	}
	return withRevision(j, rev), rev, nil
}

// notFound gives store.ErrNotFound a message that says what to do.
func notFound(err error, name string) error {
	if errors.Is(err, store.ErrNotFound) {
		return errs.Of(store.ErrNotFound, "job %q not found; `shoal job list` shows the jobs", name)
	}
	return err
}

// withRevision sets metadata.resourceVersion to the store revision for callers.
func withRevision(j *v1alpha1.Job, rev int64) *v1alpha1.Job {
	j.ResourceVersion = strconv.FormatInt(rev, 10)
	return j
}
