// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// NewCollection is the writable jobs collection, for tests that seed jobs.
func NewCollection(st *store.Store) *store.Collection[*v1alpha1.Job] { return newCollection(st) }

// UpdateStatus sets a job's status with fn, for tests that need a status no
// transition of one test makes.
func (s *Service) UpdateStatus(ctx context.Context, name string, fn func(*v1alpha1.JobStatus) error) (*v1alpha1.Job, int64, error) {
	return s.update(ctx, name, Transition{Name: "test", Owns: everyCondition, apply: func(j *v1alpha1.Job) bool {
		return fn(&j.Status) == nil
	}})
}

var everyCondition = []string{v1alpha1.JobConditionAdmitted, v1alpha1.JobConditionPlaced, v1alpha1.JobConditionRunning,
	v1alpha1.JobConditionFinished, v1alpha1.JobConditionDispatched, v1alpha1.JobConditionPreempted}

// Fresh waits for the index to hold every change of the store, for tests
// that check lists are served from it (not the scan fallback).
func (ix *ListIndex) Fresh(ctx context.Context) error { return ix.fresh(ctx) }

// BeforeWrite runs fn after a submission's jobs were admitted and before
// they are written (each put; each batch chunk, after its queues were read
// again).
func (s *Service) BeforeWrite(fn func()) { s.beforeWrite = fn }
