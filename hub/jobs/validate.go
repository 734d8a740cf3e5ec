// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/devicesel"
	"github.com/shoal-dev/shoal/federation/podrefs"
	"github.com/shoal-dev/shoal/federation/podsecurity"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/store"
)

// validate checks a defaulted job in one round: the spec (ValidateJob) and
// the pod templates (the TemplateValidator, when set) all run, and every
// field error comes back in one *v1alpha1.InvalidError, a template's under
// spec.template (spec.roles[i].template for a role's).
//
// A template is not sent to the validator when it has no containers: the
// spec validation already says so and the API server could say nothing
// else. When the validator cannot judge the template (errs.ErrUnavailable:
// the hub cluster unreachable or refusing; or another failure), a job with
// spec errors is still refused with those errors, which are final whatever
// the template holds; a job with a valid spec gets the validator's error,
// so that an unavailable hub cluster stays Unavailable and the client
// retries. The references of the template to ConfigMaps, Secrets and
// ServiceAccounts are then checked (the ReferenceChecker, when set) in the
// same way: a missing one is a field error at its path; a checker that
// cannot answer refuses a job with no other error with its error.
func (s *Service) validate(ctx context.Context, j *v1alpha1.Job, levels *levelMemo) error {
	specErrs := v1alpha1.ValidateJob(j)
	specErrs = append(specErrs, devicesel.Validate(j.Spec.Gang.Devices, field.NewPath("spec", "gang", "devices"))...)
	pss, err := s.podSecurityErrs(ctx, j, levels)
	if err != nil {
		return err
	}
	specErrs = append(specErrs, pss...)
	var tmplErrs field.ErrorList
	for i, r := range j.Spec.MemberRoles() {
		if s.validator == nil || len(r.Template.Spec.Containers) == 0 {
			continue
		}
		errs, err := s.validateTemplate(ctx, j, r.Template, templatePath(j, i))
		if err != nil {
			if len(specErrs) == 0 {
				return err
			}
			klog.FromContext(ctx).V(2).Info("Pod template not checked; refusing the job for its spec errors",
				"job", j.Name, "err", err)
			break
		}
		tmplErrs = append(tmplErrs, errs...)
	}
	all := merge(specErrs, tmplErrs)
	refErrs, err := s.checkReferences(ctx, j)
	if err != nil {
		if len(all) == 0 {
			return err
		}
		klog.FromContext(ctx).V(2).Info("References not checked; refusing the job for its other errors", "job", j.Name, "err", err)
	}
	return v1alpha1.NewInvalidError(v1alpha1.KindJob, j.Name, append(all, refErrs...))
}

// levelMemo is the queues one submission call read, each read once: its
// pod-security level and the revision it was read at, which the call's
// write is guarded on (a batch of 1,000 jobs to one queue read its queue
// 1,000 times; a single submission read it twice). The zero levelMemo is
// ready.
type levelMemo struct {
	mu sync.Mutex
	by map[string]queueRead
}

// queueRead is one queue as a submission read it.
type queueRead struct {
	// level and from are queues.PodSecurityOf the queue.
	level v1alpha1.PodSecurityLevel
	from  string
	// q and rev are the queue and its mod revision; nil and 0 when it does
	// not exist.
	q   *v1alpha1.Queue
	rev int64
}

// of reads queue name once per memo (a failed read is not kept: the next
// job reads again). The queue is read serializably (no quorum round: the
// write is guarded on its revision, so that a stale read only fails the
// write, which then reads again); a queue found absent is read again
// linearizably, so that one just created is not refused.
func (m *levelMemo) of(ctx context.Context, r store.Reader[*v1alpha1.Queue], name string) (queueRead, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.by[name]; ok {
		return l, nil
	}
	q, rev, err := r.GetSerializable(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		q, rev, err = r.Get(ctx, name)
	}
	l, err := readOf(ctx, r, name, q, rev, err)
	if err != nil {
		return queueRead{}, err
	}
	if m.by == nil {
		m.by = map[string]queueRead{}
	}
	m.by[name] = l
	return l, nil
}

// readOf is the queueRead of queue name read as (q, rev, err).
func readOf(ctx context.Context, r store.Reader[*v1alpha1.Queue], name string, q *v1alpha1.Queue, rev int64, err error) (queueRead, error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		q, rev = nil, 0
	case err != nil:
		return queueRead{}, fmt.Errorf("read queue %q: %w", name, err)
	}
	level, from, err := queues.PodSecurityOf(ctx, r, name, q)
	if err != nil {
		return queueRead{}, err
	}
	return queueRead{level: level, from: from, q: q, rev: rev}, nil
}

// templatePath is the field path of the i-th member role's pod template.
func templatePath(j *v1alpha1.Job, i int) *field.Path {
	if len(j.Spec.Roles) > 0 {
		return field.NewPath("spec", "roles").Index(i).Child("template")
	}
	return field.NewPath("spec", "template")
}

// podSecurityErrs checks every pod template of the job (each role's) at the
// effective pod-security level of its queue (hub/queues.PodSecurity), with
// the upstream Pod Security Standards evaluator (federation/podsecurity):
// each violation is a Forbidden field error at the template's container or
// spec with the library's reason. A queue that cannot be read is an error.
func (s *Service) podSecurityErrs(ctx context.Context, j *v1alpha1.Job, levels *levelMemo) (field.ErrorList, error) {
	qr, err := levels.of(ctx, s.queues, j.Spec.Queue)
	if err != nil {
		return nil, err
	}
	return podSecurityErrsAt(j, qr.level, qr.from), nil
}

// podSecurityErrsAt is podSecurityErrs at level, set on queue from.
func podSecurityErrsAt(j *v1alpha1.Job, level v1alpha1.PodSecurityLevel, from string) field.ErrorList {
	var errs field.ErrorList
	for i, r := range j.Spec.MemberRoles() {
		if r.Template == nil {
			continue
		}
		p := templatePath(j, i)
		for _, fe := range podsecurity.Check(level, &r.Template.ObjectMeta, &r.Template.Spec, p.Child("spec")) {
			fe.Detail += fmt.Sprintf("; queue %s allows %s", j.Spec.Queue, level)
			if from != "" && from != j.Spec.Queue {
				fe.Detail += " (set on " + from + ")"
			}
			errs = append(errs, fe)
		}
	}
	return errs
}

// checkReferences runs the ReferenceChecker, when set, on the required
// references of the template (federation/podrefs); a template without any
// is not sent, so that it does not depend on the hub cluster.
func (s *Service) checkReferences(ctx context.Context, j *v1alpha1.Job) (field.ErrorList, error) {
	if s.refs == nil {
		return nil, nil
	}
	refs := podrefs.Required(podrefs.References(&j.Spec.Template.Spec, field.NewPath("spec", "template", "spec")))
	if len(refs) == 0 {
		return nil, nil
	}
	fe, err := s.refs.Check(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("check the references of job %q: %w", j.Name, err)
	}
	return fe, nil
}

// validateTemplate runs the TemplateValidator on one template and returns
// its field errors under root, or the error that kept it from judging it.
func (s *Service) validateTemplate(ctx context.Context, j *v1alpha1.Job, t *corev1.PodTemplateSpec, root *field.Path) (field.ErrorList, error) {
	err := s.validator.Validate(ctx, t)
	var inv *v1alpha1.InvalidError
	switch {
	case err == nil:
		return nil, nil
	case errors.As(err, &inv):
		out := make(field.ErrorList, 0, len(inv.Errs))
		for _, fe := range inv.Errs {
			e := *fe
			e.Field = root.String()
			if fe.Field != "" {
				e.Field += "." + fe.Field
			}
			out = append(out, &e)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("validate the pod template of job %q: %w", j.Name, err)
	}
}

// merge is the spec's errors followed by the template's, less those whose
// path and type the spec validation already reports.
func merge(spec, tmpl field.ErrorList) field.ErrorList {
	type key struct {
		path string
		typ  field.ErrorType
	}
	seen := make(map[key]bool, len(spec))
	for _, e := range spec {
		seen[key{e.Field, e.Type}] = true
	}
	out := spec
	for _, e := range tmpl {
		if !seen[key{e.Field, e.Type}] {
			out = append(out, e)
		}
	}
	return out
}
