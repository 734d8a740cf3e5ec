// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// TestMembersResumeFromTheLatestCheckpoint: members of a job that reported
// a checkpoint get the resume env, annotation and read-only file in every
// container; members of a job without one get none, even when the
// template carries a resume annotation of its own.
func TestMembersResumeFromTheLatestCheckpoint(t *testing.T) {
	d := &Dispatcher{cfg: Config{Namespace: "shoal-jobs"}}
	r := reservation(2, 2, "eu1")
	fresh := testjob.New("g").Members(2).GPUs(1).With(func(j *v1alpha1.Job) {
		j.Spec.Template.Annotations = map[string]string{v1alpha1.AnnotationResumeCheckpoint: `{"step":666}`}
	}).Obj()
	p := d.memberPod(fresh, r, r.Members[0], v1alpha1.PodSecurityPrivileged)
	if _, ok := p.Annotations[v1alpha1.AnnotationResumeCheckpoint]; ok || len(p.Spec.Volumes) != 0 {
		t.Fatalf("a job without a checkpoint: annotations %v volumes %v", p.Annotations, p.Spec.Volumes)
	}
	for _, e := range p.Spec.Containers[0].Env {
		if e.Name == v1alpha1.EnvResumeURI || e.Name == v1alpha1.EnvResumeStep {
			t.Fatalf("a job without a checkpoint got %s", e.Name)
		}
	}
	ckpt := &v1alpha1.JobCheckpoint{Step: 1200, URI: "s3://ckpt/run/step-1200", Time: metav1.NewTime(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)), Count: 4}
	resumed := fresh.DeepCopy()
	resumed.Status.Checkpoint = ckpt
	resumed.Spec.Template.Spec.Containers = append(resumed.Spec.Template.Spec.Containers, resumed.Spec.Template.Spec.Containers[0])
	resumed.Spec.Template.Spec.Containers[1].Name = "sidecar"
	for _, m := range r.Members {
		p := d.memberPod(resumed, r, m, v1alpha1.PodSecurityPrivileged)
		var got v1alpha1.JobCheckpoint
		if err := json.Unmarshal([]byte(p.Annotations[v1alpha1.AnnotationResumeCheckpoint]), &got); err != nil || got.Step != 1200 || got.URI != ckpt.URI {
			t.Fatalf("member %d resume annotation %q: %v", m.Index, p.Annotations[v1alpha1.AnnotationResumeCheckpoint], err)
		}
		if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].Name != v1alpha1.ResumeVolumeName || p.Spec.Volumes[0].DownwardAPI == nil ||
			p.Spec.Volumes[0].DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.annotations['shoal.dev/resume-checkpoint']" {
			t.Fatalf("member %d volumes %+v", m.Index, p.Spec.Volumes)
		}
		for _, c := range p.Spec.Containers {
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			if env[v1alpha1.EnvResumeURI] != ckpt.URI || env[v1alpha1.EnvResumeStep] != "1200" || env[v1alpha1.EnvNodeRank] == "" {
				t.Errorf("member %d container %s env %v", m.Index, c.Name, env)
			}
			if n := len(c.VolumeMounts); n != 1 || c.VolumeMounts[0].MountPath != v1alpha1.ResumeMountPath || !c.VolumeMounts[0].ReadOnly {
				t.Errorf("member %d container %s mounts %+v", m.Index, c.Name, c.VolumeMounts)
			}
		}
	}
}

// TestGraceCutWaitsForTheKubeletsFirstKill: a grace is cut no sooner than
// graceCutDelay after the last member began terminating.
func TestGraceCutWaitsForTheKubeletsFirstKill(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	g := int64(120)
	deleting := func(ago time.Duration) *corev1.Pod {
		ts := metav1.NewTime(now.Add(-ago).Add(time.Duration(g) * time.Second))
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &ts, DeletionGracePeriodSeconds: &g}}
	}
	if at := graceCutAt([]*corev1.Pod{deleting(10 * time.Second), deleting(time.Second)}, now); !at.Equal(now.Add(graceCutDelay - time.Second)) {
		t.Errorf("cut at %s, want %s after the last deletion began", at, graceCutDelay)
	}
	if at := graceCutAt([]*corev1.Pod{deleting(10 * time.Second), {}}, now); !at.Equal(now.Add(graceCutDelay)) {
		t.Errorf("a member not yet deleted: cut at %s, want now + %s", at, graceCutDelay)
	}
	if at := graceCutAt([]*corev1.Pod{deleting(10 * time.Second)}, now); at.After(now) {
		t.Errorf("deleted 10s ago: cut at %s, want now", at)
	}
}
