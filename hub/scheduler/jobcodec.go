// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"errors"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/store"
)

// cachedJob is a job as the scheduler keeps it: only what a cycle reads
// of it. An unfinished job keeps everything but its pod templates, of
// which placement reads only the tolerations and the deadline (GangOf),
// and its status's members and placement;
// a finished one only the fields a cycle reads of it while its
// reservation lingers (queue, phase, epoch, dispatch decision, conditions,
// annotations). The templates are most of a job's bytes: decoded whole, a
// pending job of the scale harness took 3.4 KB of the hub's heap, and the
// cache holds every job stored (docs/scale.md). A cycle that writes a job
// reads it whole from the store first (wholeJobs).
//
// A pending job (phase Pending or none) also keeps its pending form, made
// once as it is decoded: what each cycle reads of it (its gang, the end of
// its backoff, its explanation), so that a cycle over 35,000 waiting jobs
// neither converts nor visits each job again.
type cachedJob struct {
	job     *v1alpha1.Job
	pending *pendingForm
}

// newCachedJob is j as the cache keeps it, with its pending form when it
// is pending.
func newCachedJob(j *v1alpha1.Job) *cachedJob {
	c := &cachedJob{job: j}
	if p := j.Status.Phase; p == "" || p == v1alpha1.JobPending {
		f := pendingFormOf(j)
		c.pending = &f
	}
	return c
}

// unfinishedJob is an unfinished job decoded without its pod templates:
// the spec's and the roles' template fields shadow JobSpec's and Role's
// (encoding/json decodes a name into the shallowest field that has it).
type unfinishedJob struct {
	metav1.TypeMeta
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		v1alpha1.JobSpec
		Template placementTemplate `json:"template"`
		Roles    []struct {
			v1alpha1.Role
			Template placementTemplate `json:"template"`
		} `json:"roles"`
	} `json:"spec"`
	Status struct {
		v1alpha1.JobStatus
		Placement skipped `json:"placement"`
		Members   skipped `json:"members"`
	} `json:"status"`
}

// skipped is a field the cache does not keep: its value is read past, not
// decoded. A placed job's status lists its members and placement (what the
// dispatcher and users read; the scheduler reads the reservation): with
// 65,000 gangs placed they were a third of the cache.
type skipped struct{}

func (*skipped) UnmarshalJSON([]byte) error { return nil }

// placementTemplate is what placement reads of a pod template.
type placementTemplate struct {
	Spec struct {
		Tolerations           []corev1.Toleration `json:"tolerations"`
		ActiveDeadlineSeconds *int64              `json:"activeDeadlineSeconds"`
	} `json:"spec"`
}

// podTemplate is t as a pod template with nothing else.
func (t placementTemplate) podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Tolerations: t.Spec.Tolerations,
		ActiveDeadlineSeconds: t.Spec.ActiveDeadlineSeconds}}
}

// jobCodec decodes stored jobs as cachedJobs; the scheduler only reads
// jobs through it (hub/jobs writes them).
type jobCodec struct{}

var errReadOnly = errors.New("scheduler: the job cache's codec only decodes")

func (jobCodec) Marshal(*cachedJob) ([]byte, error) { return nil, errReadOnly }

// Unmarshal decodes a job in one pass, as an unfinished one (most of the
// changes the cache follows are of unfinished jobs: submissions,
// explanations, the dispatcher's statuses), and keeps of a finished one
// only its metadata, queue, phase, conditions, epoch and dispatch
// decision.
func (jobCodec) Unmarshal(b []byte) (*cachedJob, error) {
	var u unfinishedJob
	if err := store.DecodeJSON(b, &u); err != nil {
		return nil, err
	}
	// The queue's name is shared by every job of the queue (unique): the
	// cycle's per-queue counts compare it once per reservation, which is
	// a pointer comparison for the same string.
	u.Spec.Queue = unique.Make(u.Spec.Queue).Value()
	dropSpecHash(&u.Metadata)
	if st := &u.Status.JobStatus; st.Phase.Terminal() {
		j := &v1alpha1.Job{ObjectMeta: u.Metadata}
		j.Spec.Queue = u.Spec.Queue
		j.Status.Phase, j.Status.Conditions = st.Phase, st.Conditions
		j.Status.Epoch, j.Status.Dispatch = st.Epoch, st.Dispatch
		return newCachedJob(j), nil
	}
	j := &v1alpha1.Job{TypeMeta: u.TypeMeta, ObjectMeta: u.Metadata, Spec: u.Spec.JobSpec, Status: u.Status.JobStatus}
	j.Spec.Template = u.Spec.Template.podTemplate()
	j.Spec.Roles = nil
	for _, r := range u.Spec.Roles {
		role := r.Role
		role.Template = r.Template.podTemplate()
		j.Spec.Roles = append(j.Spec.Roles, role)
	}
	return newCachedJob(j), nil
}

// jobReader is the scheduler's read-only view of the jobs, decoded as
// cachedJobs.
func jobReader(st *store.Store) store.Reader[*cachedJob] {
	return store.NewReader(st, jobs.Kind, jobCodec{})
}

// dropSpecHash removes the spec's hash from a cached job's annotations,
// and the map when it was the only one. Every job carries it (64 hex
// digits under a long key, in a map of its own: some 300 bytes of heap a
// job); only a resubmission's comparison reads it (hub/jobs, on the
// stored job), and a change of the spec that changes it is a change of
// the spec the cache sees anyway.
func dropSpecHash(m *metav1.ObjectMeta) {
	if _, ok := m.Annotations[v1alpha1.AnnotationSpecHash]; !ok {
		return
	}
	if len(m.Annotations) == 1 {
		m.Annotations = nil
		return
	}
	delete(m.Annotations, v1alpha1.AnnotationSpecHash)
}
