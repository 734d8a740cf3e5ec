// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"encoding/json"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/store"
)

// cachedJob is a job as the scheduler keeps it. An unfinished job is
// decoded whole (placement needs its gang and template); a finished one
// only in the fields a cycle reads of it while its reservation lingers
// (queue, phase, epoch, dispatch decision, conditions, annotations), not
// its pod template, which is most of a job's bytes. partial says which.
type cachedJob struct {
	job     *v1alpha1.Job
	partial bool
}

// finishedJob is the part of a stored job decoded for a finished one.
type finishedJob struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Queue string `json:"queue"`
	} `json:"spec"`
	Status struct {
		Phase      v1alpha1.JobPhase        `json:"phase,omitempty"`
		Conditions []metav1.Condition       `json:"conditions,omitempty"`
		Epoch      int64                    `json:"epoch,omitempty"`
		Dispatch   *v1alpha1.DispatchStatus `json:"dispatch,omitempty"`
	} `json:"status"`
}

// jobCodec decodes stored jobs as cachedJobs; the scheduler only reads
// jobs through it (hub/jobs writes them).
type jobCodec struct{}

var errReadOnly = errors.New("scheduler: the job cache's codec only decodes")

func (jobCodec) Marshal(*cachedJob) ([]byte, error) { return nil, errReadOnly }

func (jobCodec) Unmarshal(b []byte) (*cachedJob, error) {
	var head finishedJob
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, err
	}
	if head.Status.Phase.Terminal() {
		j := &v1alpha1.Job{ObjectMeta: head.Metadata}
		j.Spec.Queue = head.Spec.Queue
		j.Status.Phase, j.Status.Conditions = head.Status.Phase, head.Status.Conditions
		j.Status.Epoch, j.Status.Dispatch = head.Status.Epoch, head.Status.Dispatch
		return &cachedJob{job: j, partial: true}, nil
	}
	var j v1alpha1.Job
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, err
	}
	return &cachedJob{job: &j}, nil
}

// jobReader is the scheduler's read-only view of the jobs, decoded as
// cachedJobs.
func jobReader(st *store.Store) store.Reader[*cachedJob] {
	return store.NewReader(st, jobs.Kind, jobCodec{})
}
