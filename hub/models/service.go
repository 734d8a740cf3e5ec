// SPDX-License-Identifier: Apache-2.0

package models

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/store"
)

// Kind is the store kind of ModelVersion records, named "<model>@<version>".
const Kind = "modelversions"

// MaxLineageDepth bounds how many parents Lineage follows.
const MaxLineageDepth = 100

// JobReader reads the job a registration names as its source (hub/jobs).
type JobReader interface {
	Get(ctx context.Context, name string) (*v1alpha1.Job, int64, error)
}

// Service registers and reads model versions.
type Service struct {
	versions *store.Collection[*v1alpha1.ModelVersion]
	jobs     JobReader
	clock    clock.PassiveClock
}

// Option configures a Service.
type Option func(*Service)

// WithClock sets the clock of registration times (tests).
func WithClock(c clock.PassiveClock) Option { return func(s *Service) { s.clock = c } }

// New returns the service on st; jobs resolves source jobs.
func New(st *store.Store, jobs JobReader, opts ...Option) *Service {
	s := &Service{versions: store.NewCollection(st, Kind, store.JSONCodec[*v1alpha1.ModelVersion]()), jobs: jobs, clock: clock.RealClock{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Result says what Register did.
type Result string

// The registration results.
const (
	Created  Result = "created"
	Existing Result = "existing"
)

// Register validates and stores a new version registered by `by`. A source
// job must exist and authorize must allow the caller to read it (else its
// error is returned); its latest checkpoint is the version's unless the
// registration names another step, which is refused (the hub keeps only a
// job's latest). A parent must be registered. The same spec again returns
// the stored version (Existing); another spec under its name is
// store.ErrAlreadyExists.
func (s *Service) Register(ctx context.Context, in *v1alpha1.ModelVersion, by string, authorize func(*v1alpha1.Job) error) (*v1alpha1.ModelVersion, int64, Result, error) {
	m := in.DeepCopy()
	m.Status = v1alpha1.ModelVersionStatus{}
	if err := v1alpha1.ValidateModelVersion(m); err != nil {
		return nil, 0, "", err
	}
	m.Name = v1alpha1.ModelVersionName(m.Spec.Model, m.Spec.Version)
	m.APIVersion, m.Kind = v1alpha1.GroupVersion.String(), v1alpha1.KindModelVersion
	if old, rev, err := s.versions.Get(ctx, m.Name); err == nil {
		return s.existing(old, rev, m)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, 0, "", err
	}
	if p := m.Spec.Parent; p != "" {
		if _, _, err := s.versions.Get(ctx, p); errors.Is(err, store.ErrNotFound) {
			return nil, 0, "", errs.Precondition(fmt.Sprintf("parent %s is not registered", p), "register the parent version first")
		} else if err != nil {
			return nil, 0, "", err
		}
	}
	if err := s.source(ctx, m, authorize); err != nil {
		return nil, 0, "", err
	}
	now := metav1.NewTime(s.clock.Now().UTC())
	m.UID, m.CreationTimestamp, m.Generation = uuid.NewUUID(), now, 1
	m.Status.RegisteredAt, m.Status.RegisteredBy = &now, by
	rev, err := s.versions.Create(ctx, m.Name, m)
	if errors.Is(err, store.ErrAlreadyExists) { // a concurrent registration won
		old, orev, gerr := s.versions.Get(ctx, m.Name)
		if gerr != nil {
			return nil, 0, "", gerr
		}
		return s.existing(old, orev, m)
	}
	if err != nil {
		return nil, 0, "", err
	}
	registrations.Inc()
	return withRevision(m, rev), rev, Created, nil
}

// existing answers a registration of a name already taken.
func (s *Service) existing(old *v1alpha1.ModelVersion, rev int64, m *v1alpha1.ModelVersion) (*v1alpha1.ModelVersion, int64, Result, error) {
	if equality.Semantic.DeepEqual(old.Spec, m.Spec) {
		return withRevision(old, rev), rev, Existing, nil
	}
	return nil, 0, "", errs.Of(store.ErrAlreadyExists,
		"model version %s is already registered with another spec; versions never change: register a new version", m.Name)
}

// source records the version's source job and checkpoint as they are now.
func (s *Service) source(ctx context.Context, m *v1alpha1.ModelVersion, authorize func(*v1alpha1.Job) error) error {
	src := m.Spec.Source
	if src == nil {
		return nil
	}
	j, _, err := s.jobs.Get(ctx, src.Job)
	if errors.Is(err, store.ErrNotFound) {
		return errs.Precondition(fmt.Sprintf("source job %q not found", src.Job), "a version names a job the hub still has (`shoal job list`)")
	}
	if err != nil {
		return err
	}
	if authorize != nil {
		if err := authorize(j); err != nil {
			return err
		}
	}
	m.Status.Job = &v1alpha1.ModelJobRecord{Name: j.Name, UID: string(j.UID), Queue: j.Spec.Queue, Owner: j.Status.Owner, Phase: j.Status.Phase}
	c := j.Status.Checkpoint
	switch {
	case src.CheckpointStep == nil:
	case c == nil:
		return errs.Precondition(fmt.Sprintf("job %q reported no checkpoint, so step %d cannot be its source", j.Name, *src.CheckpointStep),
			"leave spec.source.checkpointStep out, or report the checkpoint first (`shoal job checkpoint`)")
	case c.Step != *src.CheckpointStep:
		return errs.Precondition(fmt.Sprintf("job %q's latest checkpoint is step %d, not %d", j.Name, c.Step, *src.CheckpointStep),
			"the hub keeps a job's latest checkpoint only: name that step, or leave checkpointStep out")
	}
	if c != nil {
		m.Status.Checkpoint = c.DeepCopy()
	}
	return nil
}

// Get returns the version named "<model>@<version>".
func (s *Service) Get(ctx context.Context, name string) (*v1alpha1.ModelVersion, int64, error) {
	m, rev, err := s.versions.Get(ctx, name)
	if err != nil {
		return nil, 0, notFound(err, name)
	}
	return withRevision(m, rev), rev, nil
}

// List returns every version, or those of model, sorted by name.
func (s *Service) List(ctx context.Context, model string) ([]*v1alpha1.ModelVersion, int64, error) {
	var out []*v1alpha1.ModelVersion
	var at int64
	opts := store.ListOptions{Limit: 500}
	for {
		res, err := s.versions.List(ctx, opts)
		if err != nil {
			return nil, 0, err
		}
		at = res.Revision
		for _, it := range res.Items {
			if model == "" || it.Object.Spec.Model == model {
				out = append(out, withRevision(it.Object, it.Revision))
			}
		}
		if res.Continue == "" {
			break
		}
		opts.Continue = res.Continue
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, at, nil
}

// Lineage returns the version named and its ancestors, parent after child,
// down to a version without a parent.
func (s *Service) Lineage(ctx context.Context, name string) ([]*v1alpha1.ModelVersion, error) {
	var out []*v1alpha1.ModelVersion
	seen := map[string]bool{}
	for next := name; next != ""; {
		if seen[next] || len(out) == MaxLineageDepth {
			return out, fmt.Errorf("lineage of %s: stopped at %s after %d versions", name, next, len(out))
		}
		seen[next] = true
		m, _, err := s.Get(ctx, next)
		if err != nil {
			if len(out) > 0 { // a parent is never deleted while registered; say so if it was
				return out, fmt.Errorf("lineage of %s: parent %s: %w", name, next, err)
			}
			return nil, err
		}
		out = append(out, m)
		next = m.Spec.Parent
	}
	return out, nil
}

// withRevision sets metadata.resourceVersion to the store revision for callers.
func withRevision(m *v1alpha1.ModelVersion, rev int64) *v1alpha1.ModelVersion {
	m.ResourceVersion = strconv.FormatInt(rev, 10)
	return m
}

// notFound gives store.ErrNotFound a message that says what to do.
func notFound(err error, name string) error {
	if errors.Is(err, store.ErrNotFound) {
		return errs.Of(store.ErrNotFound, "model version %q not found; `shoal model list` shows the versions", name)
	}
	return err
}
