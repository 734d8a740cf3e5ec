// SPDX-License-Identifier: Apache-2.0

package queues

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/store"
)

// Delete removes a queue that has no child queues and no non-terminal jobs;
// otherwise it returns an errs.ErrFailedPrecondition naming what is left.
func (s *Service) Delete(ctx context.Context, name string) error {
	if err := s.checkNoChildren(ctx, name); err != nil {
		return err
	}
	markedRev, err := s.mark(ctx, name, true)
	if err != nil {
		return notFound(err, name)
	}
	n, err := s.jobs.ActiveJobs(ctx, name)
	if err == nil && n > 0 {
		err = errs.Precondition(fmt.Sprintf("queue %q still has %d job(s) that are not finished", name, n),
			fmt.Sprintf("cancel them (`shoal job list --queue %s`) or wait for them to finish", name))
	}
	if err == nil {
		err = s.queues.Delete(ctx, name, markedRev)
	}
	if err != nil {
		if _, uerr := s.mark(ctx, name, false); uerr != nil && !errors.Is(uerr, store.ErrNotFound) {
			return errors.Join(err, fmt.Errorf("queue %q stays marked for deletion: %w", name, uerr))
		}
	}
	return err
}

// checkNoChildren refuses deleting a queue that has child queues.
func (s *Service) checkNoChildren(ctx context.Context, name string) error {
	all, err := listAll(ctx, s.queues)
	if err != nil {
		return err
	}
	var children []string
	for _, it := range all {
		if strings.HasPrefix(it.Name, name+"/") {
			children = append(children, it.Name)
		}
	}
	if len(children) > 0 {
		return errs.Precondition(fmt.Sprintf("queue %q has child queues %v", name, children),
			"delete the children first")
	}
	return nil
}

// mark sets or clears the queue's deletion mark and returns its new revision.
func (s *Service) mark(ctx context.Context, name string, on bool) (int64, error) {
	_, rev, err := s.queues.GuaranteedUpdate(ctx, name, func(q *v1alpha1.Queue) (*v1alpha1.Queue, error) {
		if on {
			now := metav1.NewTime(s.clock.Now())
			q.DeletionTimestamp = &now
		} else {
			q.DeletionTimestamp = nil
		}
		return q, nil
	})
	return rev, err
}
