// SPDX-License-Identifier: Apache-2.0

package inference

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/store"
)

// Kind is the store kind of InferenceService records.
const Kind = "inferenceservices"

// LoadFreshFor is how long a load report counts.
const LoadFreshFor = 60 * time.Second

// Models reads registered model versions (hub/models).
type Models interface {
	Get(ctx context.Context, name string) (*v1alpha1.ModelVersion, int64, error)
}

// Jobs is what the service and its controller do with replica jobs
// (hub/jobs.Service).
type Jobs interface {
	SubmitAs(ctx context.Context, in *v1alpha1.Job, owner string, dryRun bool) (*v1alpha1.Job, int64, jobs.Result, error)
	List(ctx context.Context, opts jobs.ListOptions) (jobs.ListResult, error)
	Cancel(ctx context.Context, name string) (*v1alpha1.Job, int64, error)
	Delete(ctx context.Context, name string) (*v1alpha1.Job, int64, error)
}

// Service stores InferenceServices.
type Service struct {
	services *store.Collection[*v1alpha1.InferenceService]
	models   Models
	jobs     Jobs
	clock    clock.PassiveClock
}

// Option configures a Service.
type Option func(*Service)

// WithClock sets the clock (tests).
func WithClock(c clock.PassiveClock) Option { return func(s *Service) { s.clock = c } }

// New returns the service on st.
func New(st *store.Store, models Models, js Jobs, opts ...Option) *Service {
	s := &Service{services: store.NewCollection(st, Kind, store.JSONCodec[*v1alpha1.InferenceService]()),
		models: models, jobs: js, clock: clock.RealClock{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// admit defaults and validates a service, checks its model version is
// registered, and dry-runs its replica job as owner would submit it (queue
// exists, template passes the hub cluster's checks).
func (s *Service) admit(ctx context.Context, in *v1alpha1.InferenceService, owner string) (*v1alpha1.InferenceService, error) {
	v := in.DeepCopy()
	v.Status = v1alpha1.InferenceServiceStatus{}
	v1alpha1.SetInferenceServiceDefaults(v)
	if err := v1alpha1.ValidateInferenceService(v); err != nil {
		return nil, err
	}
	mv, _, err := s.models.Get(ctx, v.Spec.Model)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errs.Precondition(fmt.Sprintf("spec.model: model version %s is not registered", v.Spec.Model),
			"register it first (`shoal model register`); `shoal model list` shows the versions")
	}
	if err != nil {
		return nil, err
	}
	if _, _, _, err := s.jobs.SubmitAs(ctx, v1alpha1.ReplicaJob(v, mv, v.Name+"-check"), owner, true); err != nil {
		return nil, fmt.Errorf("the service's replica job is refused: %w", err)
	}
	return v, nil
}

// Create stores a new service owned by owner.
func (s *Service) Create(ctx context.Context, in *v1alpha1.InferenceService, owner string) (*v1alpha1.InferenceService, int64, error) {
	v, err := s.admit(ctx, in, owner)
	if err != nil {
		return nil, 0, err
	}
	now := metav1.NewTime(s.clock.Now().UTC())
	v.UID, v.CreationTimestamp, v.Generation, v.ResourceVersion = uuid.NewUUID(), now, 1, ""
	v.Status = v1alpha1.InferenceServiceStatus{Owner: owner}
	rev, err := s.services.Create(ctx, v.Name, v)
	if errors.Is(err, store.ErrAlreadyExists) {
		return nil, 0, errs.Of(store.ErrAlreadyExists, "inference service %q already exists; change it with `shoal service update`", v.Name)
	}
	if err != nil {
		return nil, 0, err
	}
	return withRevision(v, rev), rev, nil
}

// Update replaces the spec of a service (its queue stays). With rev > 0
// the service must still be at that revision (store.ErrConflict).
func (s *Service) Update(ctx context.Context, in *v1alpha1.InferenceService, rev int64) (*v1alpha1.InferenceService, int64, error) {
	old, orev, err := s.Get(ctx, in.Name)
	if err != nil {
		return nil, 0, err
	}
	if rev > 0 && rev != orev {
		return nil, 0, errs.Of(store.ErrConflict, "inference service %q changed since revision %d (now %d); read it again", in.Name, rev, orev)
	}
	if in.Spec.Queue != old.Spec.Queue {
		return nil, 0, v1alpha1.NewInvalidError(v1alpha1.KindInferenceService, in.Name, fieldErr("spec.queue", in.Spec.Queue,
			"cannot change: the replicas are jobs of queue "+old.Spec.Queue+"; create a new service"))
	}
	v, err := s.admit(ctx, in, old.Status.Owner)
	if err != nil {
		return nil, 0, err
	}
	change := func(cur *v1alpha1.InferenceService) *v1alpha1.InferenceService {
		n := cur.DeepCopy()
		if !equality.Semantic.DeepEqual(n.Spec, v.Spec) {
			n.Spec = v.Spec
			n.Generation++
		}
		n.Labels, n.Annotations, n.ResourceVersion = v.Labels, v.Annotations, ""
		return n
	}
	var out *v1alpha1.InferenceService
	var nrev int64
	if rev > 0 {
		out = change(old)
		nrev, err = s.services.Update(ctx, in.Name, out, rev)
	} else {
		out, nrev, err = s.services.GuaranteedUpdate(ctx, in.Name, func(cur *v1alpha1.InferenceService) (*v1alpha1.InferenceService, error) {
			return change(cur), nil
		})
	}
	if errors.Is(err, store.ErrConflict) {
		return nil, 0, errs.Of(store.ErrConflict, "inference service %q changed since revision %d; read it again", in.Name, rev)
	}
	if err != nil {
		return nil, 0, notFound(err, in.Name)
	}
	return withRevision(out, nrev), nrev, nil
}

// Get returns a service.
func (s *Service) Get(ctx context.Context, name string) (*v1alpha1.InferenceService, int64, error) {
	v, rev, err := s.services.Get(ctx, name)
	if err != nil {
		return nil, 0, notFound(err, name)
	}
	return withRevision(v, rev), rev, nil
}

// List returns every service, or those of queue, sorted by name.
func (s *Service) List(ctx context.Context, queue string) ([]*v1alpha1.InferenceService, int64, error) {
	var out []*v1alpha1.InferenceService
	var at int64
	opts := store.ListOptions{Limit: 500}
	for {
		res, err := s.services.List(ctx, opts)
		if err != nil {
			return nil, 0, err
		}
		at = res.Revision
		for _, it := range res.Items {
			if queue == "" || it.Object.Spec.Queue == queue {
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

// Delete removes a service and cancels its replicas (the controller also
// cancels replicas of services that no longer exist, should this stop
// half-way).
func (s *Service) Delete(ctx context.Context, name string) (*v1alpha1.InferenceService, int64, error) {
	v, rev, err := s.Get(ctx, name)
	if err != nil {
		return nil, 0, err
	}
	if err := s.services.Delete(ctx, name, rev); err != nil {
		return nil, 0, notFound(err, name)
	}
	reps, err := replicaJobs(ctx, s.jobs, v.Spec.Queue, name)
	if err != nil {
		return v, rev, nil // the controller's sweep cancels them
	}
	for _, j := range reps {
		if !j.Status.Phase.Terminal() {
			_, _, _ = s.jobs.Cancel(ctx, j.Name)
		}
	}
	return v, rev, nil
}

// ReportLoad records value as source's load of the service.
func (s *Service) ReportLoad(ctx context.Context, name, source string, value int64) (*v1alpha1.InferenceService, int64, error) {
	if value < 0 {
		return nil, 0, v1alpha1.NewInvalidError(v1alpha1.KindInferenceService, name, fieldErr("value", value, "must be 0 or more"))
	}
	now := s.clock.Now()
	out, rev, err := s.services.GuaranteedUpdate(ctx, name, func(cur *v1alpha1.InferenceService) (*v1alpha1.InferenceService, error) {
		n := cur.DeepCopy()
		n.Status.Load = recordLoad(n.Status.Load, source, value, now)
		return n, nil
	})
	if err != nil {
		return nil, 0, notFound(err, name)
	}
	return withRevision(out, rev), rev, nil
}

// recordLoad sets source's report, drops stale ones and sums the rest.
func recordLoad(l *v1alpha1.ServiceLoad, source string, value int64, now time.Time) *v1alpha1.ServiceLoad {
	out := &v1alpha1.ServiceLoad{}
	if l != nil {
		for _, src := range l.Sources {
			if src.Source != source && now.Sub(src.Time.Time) < LoadFreshFor {
				out.Sources = append(out.Sources, src)
			}
		}
	}
	out.Sources = append(out.Sources, v1alpha1.ServiceLoadSource{Source: source, Value: value, Time: metav1.NewTime(now.UTC().Truncate(time.Second))})
	sort.Slice(out.Sources, func(i, j int) bool { return out.Sources[i].Source < out.Sources[j].Source })
	for _, src := range out.Sources {
		out.Value += src.Value
	}
	return out
}

// updateStatus writes the controller's status of a service decided at
// spec generation gen (nothing when the spec changed since), keeping the
// load ReportLoad may have written meanwhile.
func (s *Service) updateStatus(ctx context.Context, name string, gen int64, st v1alpha1.InferenceServiceStatus, guards ...store.Cond) error {
	_, _, err := s.services.GuaranteedUpdate(ctx, name, func(cur *v1alpha1.InferenceService) (*v1alpha1.InferenceService, error) {
		if cur.Generation != gen {
			return nil, errStale
		}
		n := cur.DeepCopy()
		st.Load = n.Status.Load
		if equality.Semantic.DeepEqual(n.Status, st) {
			return nil, errUnchanged // most passes: nothing to write
		}
		n.Status = st
		return n, nil
	}, guards...)
	if errors.Is(err, errStale) || errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}

// errStale: the spec changed since the status was decided; errUnchanged:
// the status is already st.
var (
	errStale     = errors.New("inference service changed")
	errUnchanged = errors.New("inference service status unchanged")
)

func fieldErr(path string, value any, detail string) field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath(path), value, detail)}
}

// replicaJobs returns the jobs of queue labelled as replicas of service.
func replicaJobs(ctx context.Context, js Jobs, queue, service string) ([]*v1alpha1.Job, error) {
	var out []*v1alpha1.Job
	opts := jobs.ListOptions{Queue: queue, Service: service, Limit: jobs.MaxListLimit}
	for {
		res, err := js.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, j := range res.Items {
			if j.Labels[v1alpha1.LabelInferenceService] == service {
				out = append(out, j)
			}
		}
		if res.Continue == "" {
			return out, nil
		}
		opts.Continue = res.Continue
	}
}

func withRevision(v *v1alpha1.InferenceService, rev int64) *v1alpha1.InferenceService {
	v.ResourceVersion = strconv.FormatInt(rev, 10)
	return v
}

func notFound(err error, name string) error {
	if errors.Is(err, store.ErrNotFound) {
		return errs.Of(store.ErrNotFound, "inference service %q not found; `shoal service list` shows the services", name)
	}
	return err
}
