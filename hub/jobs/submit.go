// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/internal/tracing"
)

// maxAttempts bounds the retries of a submission whose queue changed
// between the read and the write.
const maxAttempts = 8

// Result says what Submit did.
type Result string

// The submission results.
const (
	// Created: the job was stored.
	Created Result = "created"
	// Existing: the same job was already stored; nothing changed.
	Existing Result = "existing"
	// DryRun: the job is valid; nothing was stored.
	DryRun Result = "dry_run"
)

// Submit accepts a job into its queue as Pending and returns the stored job
// and its revision. See the package documentation for the rules.
func (s *Service) Submit(ctx context.Context, in *v1alpha1.Job, dryRun bool) (*v1alpha1.Job, int64, Result, error) {
	return s.SubmitAs(ctx, in, "", dryRun)
}

// SubmitAs is Submit on behalf of user owner, recorded in status.owner
// (whatever owner the client sent is replaced). Resubmitting an existing
// job of another owner is errs.ErrPermissionDenied.
func (s *Service) SubmitAs(ctx context.Context, in *v1alpha1.Job, owner string, dryRun bool) (_ *v1alpha1.Job, _ int64, res Result, err error) {
	start := time.Now()
	defer func() { observeSubmit(start, res, err) }()
	levels := &levelMemo{}
	j, hash, err := s.admit(ctx, in, levels)
	if err != nil {
		return nil, 0, "", err
	}
	j.Status.Owner = owner
	if dryRun {
		// A dry run answers what a submit would: an unknown queue too.
		if _, err := s.queueRevision(ctx, j.Spec.Queue, levels); err != nil {
			return nil, 0, "", err
		}
		return j, 0, DryRun, nil
	}
	tracing.NewAttempt(start).Annotate(j.Annotations)
	return s.put(ctx, j, hash, owner, start, levels)
}

// put stores an admitted job, retrying while its queue changes under it;
// a job of the same name already stored is the result when its spec hash
// is hash and its owner owner, and a refusal otherwise. levels holds the
// queue as the job was admitted against it: the first attempt is guarded
// on that revision; a retry reads the queue again (linearizably) and
// checks the job against the queue's pod-security level again.
func (s *Service) put(ctx context.Context, j *v1alpha1.Job, hash, owner string, start time.Time, levels *levelMemo) (*v1alpha1.Job, int64, Result, error) {
	if s.beforeWrite != nil {
		s.beforeWrite()
	}
	for range maxAttempts {
		qrev, err := s.queueRevision(ctx, j.Spec.Queue, levels)
		if err != nil {
			return nil, 0, "", err
		}
		rev, err := s.store.Txn(ctx).
			If(s.queues.RevIs(j.Spec.Queue, qrev), s.jobs.Absent(j.Name)).
			Then(s.jobs.PutOp(j.Name, j)).Commit()
		if err == nil {
			traceSubmit(ctx, j, start)
			return withRevision(j, rev), rev, Created, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return nil, 0, "", err
		}
		cur, curRev, gerr := s.jobs.Get(ctx, j.Name)
		if gerr == nil && cur.Status.Owner != owner {
			return nil, 0, "", errs.Denied("job %q exists and belongs to user %q; choose another name", cur.Name, cur.Status.Owner)
		}
		if gerr == nil {
			return sameJob(cur, curRev, hash)
		}
		if !errors.Is(gerr, store.ErrNotFound) {
			return nil, 0, "", gerr
		}
		if err := s.readAgain(ctx, j, levels); err != nil {
			return nil, 0, "", err
		}
	}
	return nil, 0, "", fmt.Errorf("submit job %q: %w: queue %q kept changing", j.Name, store.ErrConflict, j.Spec.Queue)
}

// readAgain reads j's queue into levels again, linearizably, after a write
// guarded on the revision read before failed, and refuses j when the
// queue's pod-security level now forbids it.
func (s *Service) readAgain(ctx context.Context, j *v1alpha1.Job, levels *levelMemo) error {
	qr, changed, err := s.refresh(ctx, j.Spec.Queue, levels, false)
	if err != nil || !changed {
		return err
	}
	return v1alpha1.NewInvalidError(v1alpha1.KindJob, j.Name, podSecurityErrsAt(j, qr.level, qr.from))
}

// refresh reads queue name into levels again (serializably for a batch's
// next transaction, linearizably after a failed write) and says whether
// its pod-security level changed since levels read it.
func (s *Service) refresh(ctx context.Context, name string, levels *levelMemo, serializable bool) (queueRead, bool, error) {
	get := s.queues.Get
	if serializable {
		get = s.queues.GetSerializable
	}
	q, rev, err := get(ctx, name)
	qr, err := readOf(ctx, s.queues, name, q, rev, err)
	if err != nil {
		return queueRead{}, false, err
	}
	levels.mu.Lock()
	defer levels.mu.Unlock()
	before, had := levels.by[name]
	if levels.by == nil {
		levels.by = map[string]queueRead{}
	}
	levels.by[name] = qr
	return qr, had && (qr.level != before.level || qr.from != before.from), nil
}

// admit defaults, validates and stamps a copy of in; it returns the job to
// store and its spec hash. levels, when not nil, holds the queues'
// pod-security levels read for the other jobs of the same call.
func (s *Service) admit(ctx context.Context, in *v1alpha1.Job, levels *levelMemo) (*v1alpha1.Job, string, error) {
	j := &v1alpha1.Job{TypeMeta: in.TypeMeta, Spec: in.Spec}
	j.Name, j.Namespace, j.Labels = in.Name, in.Namespace, in.Labels
	j.Annotations = map[string]string{}
	for k, v := range in.Annotations {
		j.Annotations[k] = v
	}
	v1alpha1.SetJobDefaults(j)
	if err := s.validate(ctx, j, levels); err != nil {
		return nil, "", err
	}
	hash, err := specHash(&j.Spec)
	if err != nil {
		return nil, "", err
	}
	now := metav1.NewTime(s.clock.Now())
	j.Annotations[v1alpha1.AnnotationSpecHash] = hash
	tracing.Attempt{}.Annotate(j.Annotations) // the hub's own (SubmitAs), never the client's
	j.UID, j.CreationTimestamp, j.Generation = uuid.NewUUID(), now, 1
	submitted := v1alpha1.NewMicroTime(now.Time)
	j.Status = v1alpha1.JobStatus{Phase: v1alpha1.JobPending, SubmitTime: &submitted, Conditions: []metav1.Condition{{
		Type: v1alpha1.JobConditionAdmitted, Status: metav1.ConditionTrue, Reason: "Queued",
		Message: fmt.Sprintf("accepted into queue %s", j.Spec.Queue), LastTransitionTime: now, ObservedGeneration: 1,
	}}}
	return j, hash, nil
}

// queueRevision returns the revision of j's queue that a write of the job
// is guarded on, as levels read it (reading it when it has not), or the
// refusal of a queue that does not exist or is being deleted.
func (s *Service) queueRevision(ctx context.Context, name string, levels *levelMemo) (int64, error) {
	qr, err := levels.of(ctx, s.queues, name)
	if err != nil {
		return 0, err
	}
	if qr.q == nil {
		return 0, errs.Precondition(fmt.Sprintf("queue %q does not exist", name),
			fmt.Sprintf("create it with `shoal queue create %s` or set spec.queue to an existing queue (`shoal queue list`)", name))
	}
	if qr.q.DeletionTimestamp != nil {
		return 0, errs.Precondition(fmt.Sprintf("queue %q is being deleted", name), "submit to another queue")
	}
	return qr.rev, nil
}

// sameJob returns the stored job when its spec hash is hash, and
// store.ErrAlreadyExists otherwise.
func sameJob(cur *v1alpha1.Job, rev int64, hash string) (*v1alpha1.Job, int64, Result, error) {
	if cur.Annotations[v1alpha1.AnnotationSpecHash] == hash {
		return withRevision(cur, rev), rev, Existing, nil
	}
	return nil, 0, "", errs.Of(store.ErrAlreadyExists, "job %q exists with a different spec; choose another name, "+
		"or cancel the old job and submit under a new one (`shoal job describe %s` shows it)", cur.Name, cur.Name)
}

// specHash is the SHA-256 of the spec's JSON (map keys sorted, so stable).
func specHash(spec *v1alpha1.JobSpec) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("hash job spec: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
