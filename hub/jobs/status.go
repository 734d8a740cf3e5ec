// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// ErrNotOwned is returned, and nothing is written, when a Transition changes
// a condition type it does not declare (a bug in this package).
var ErrNotOwned = errors.New("transition changes a condition it does not own")

// Transition is one typed change of a Job's status (and of the annotations
// that go with it), made by this package on behalf of whoever asks: the
// scheduler books, explains and marks preemptions; the dispatcher decides,
// aggregates, requeues and fails. Owns lists the condition types the
// transition may set or remove; Status refuses to write one that touches
// another (as Flux's patch.WithOwnedConditions keeps each controller to its
// own conditions).
type Transition struct {
	// Name says what the transition does, for errors.
	Name string
	// Owns are the condition types the transition may change.
	Owns []string
	// apply changes j in place; false means there is nothing to change.
	apply func(j *v1alpha1.Job) bool
}

// Status is the only writer of Job status: it applies Transitions to a job
// as read, guarded by the revision read, so a caller that decided on a
// stale job gets store.ErrConflict and decides again.
type Status struct {
	st   *store.Store
	jobs *store.Collection[*v1alpha1.Job]
}

// NewStatus returns the Job status writer on st.
func NewStatus(st *store.Store) *Status { return &Status{st: st, jobs: newCollection(st)} }

// NewReader returns the read-only view of the jobs for other packages.
func NewReader(st *store.Store) store.Reader[*v1alpha1.Job] { return newCollection(st).Reader() }

// Reader returns the read-only view of the jobs.
func (s *Status) Reader() store.Reader[*v1alpha1.Job] { return s.jobs.Reader() }

// Apply writes t to the job it was decided on, if the job is still at
// it.Revision and every guard holds (store.ErrConflict otherwise: a leader
// passes its leadership's store.Leadership.Held, so that a deposed one
// cannot write), and returns the job as stored. A transition with nothing
// to change writes nothing and returns it.
func (s *Status) Apply(ctx context.Context, it store.Item[*v1alpha1.Job], t Transition, guards ...store.Cond) (store.Item[*v1alpha1.Job], error) {
	next, changed, err := next(it.Object, t)
	if err != nil || !changed {
		return it, err
	}
	var rev int64
	if len(guards) == 0 {
		rev, err = s.jobs.Update(ctx, it.Name, next, it.Revision)
	} else {
		rev, err = s.st.Txn(ctx).If(append([]store.Cond{s.jobs.RevIs(it.Name, it.Revision)}, guards...)...).
			Then(s.jobs.PutOp(it.Name, next)).Commit()
	}
	if err != nil {
		return it, fmt.Errorf("%s job %q: %w", t.Name, it.Name, err)
	}
	return store.Item[*v1alpha1.Job]{Name: it.Name, Object: next, Revision: rev}, nil
}

// Ops returns t as the guard and the write of a caller's transaction, for
// changes that must be atomic with another owner's records (a booking with
// the ledger's reservation, a teardown with its release). next is the job
// the transaction stores. A transition with nothing to change still guards
// the revision and rewrites the job as it is.
func (s *Status) Ops(it store.Item[*v1alpha1.Job], t Transition) (store.Cond, store.Op, *v1alpha1.Job, error) {
	next, changed, err := next(it.Object, t)
	if err != nil {
		return store.Cond{}, store.Op{}, nil, err
	}
	if !changed {
		next = it.Object.DeepCopy()
		next.ResourceVersion = ""
	}
	return s.jobs.RevIs(it.Name, it.Revision), s.jobs.PutOp(it.Name, next), next, nil
}

// next applies t to a copy of j, checks that it kept to its conditions and
// returns the copy (without resource version) and whether it differs; a
// transition with nothing to do returns no copy (nil, false): the
// scheduler explains every waiting job each cycle, and most explanations
// stand, so a second copy of each would be most of that cost.
func next(j *v1alpha1.Job, t Transition) (*v1alpha1.Job, bool, error) {
	if j == nil || t.apply == nil {
		return nil, false, fmt.Errorf("%s: no job or no transition", t.Name)
	}
	n := j.DeepCopy()
	n.ResourceVersion = ""
	if !t.apply(n) {
		return nil, false, nil
	}
	if typ, ok := foreignChange(j.Status.Conditions, n.Status.Conditions, t.Owns); !ok {
		return nil, false, fmt.Errorf("%w: %s changes %s", ErrNotOwned, t.Name, typ)
	}
	changed := !sameJSON(n.Status, j.Status) || !sameJSON(n.Annotations, j.Annotations)
	return n, changed, nil
}

// foreignChange returns the first condition type outside owns that differs
// between before and after.
func foreignChange(before, after []metav1.Condition, owns []string) (string, bool) {
	for _, conds := range [][]metav1.Condition{before, after} {
		for _, c := range conds {
			if slices.Contains(owns, c.Type) {
				continue
			}
			b, a := meta.FindStatusCondition(before, c.Type), meta.FindStatusCondition(after, c.Type)
			if b == nil || a == nil || !sameJSON(*b, *a) {
				return c.Type, false
			}
		}
	}
	return "", true
}

// sameJSON compares two values as stored (times to the second, whatever
// their location).
func sameJSON(a, b any) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && string(ja) == string(jb)
}
