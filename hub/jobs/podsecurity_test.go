// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/test/builders/testjob"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// TestSubmitChecksPodSecurity: every pod template (each role's) is checked
// at the effective pod-security level of the job's queue, the strictest
// along its path; a violation is a Forbidden field error at the container or
// the pod spec, with the library's reason, in the one InvalidError.
func TestSubmitChecksPodSecurity(t *testing.T) {
	ctx, root := testCtx(t), uniq("pss")
	js, qs := services(t, nil)
	for _, q := range []*v1alpha1.Queue{
		testqueue.New(root).PodSecurity(v1alpha1.PodSecurityPrivileged).Obj(),
		testqueue.New(root + "/open").Obj(), // inherits privileged
		testqueue.New(root + "/base").PodSecurity(v1alpha1.PodSecurityBaseline).Obj(),
		// asks for privileged under a baseline parent: baseline applies
		testqueue.New(root + "/base/wants-more").PodSecurity(v1alpha1.PodSecurityPrivileged).Obj(),
		testqueue.New(root + "/tight").PodSecurity(v1alpha1.PodSecurityRestricted).Obj(),
	} {
		if _, _, err := qs.Create(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	privileged := func(queue string) *v1alpha1.Job {
		j := job(uniq("priv"), queue)
		yes := true
		j.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
		return j
	}
	if _, _, _, err := js.Submit(ctx, privileged(root+"/open"), false); err != nil {
		t.Errorf("privileged member in a privileged queue: %v", err)
	}
	for _, q := range []string{root + "/base", root + "/base/wants-more", root + "/tight"} {
		_, _, _, err := js.Submit(ctx, privileged(q), false)
		if got := fieldsOf(t, err); !slices.Contains(got, "spec.template.spec.containers[0]: Forbidden") {
			t.Errorf("queue %s: errors %v, want the container Forbidden", q, got)
		}
		var inv *v1alpha1.InvalidError
		if errors.As(err, &inv) && !strings.Contains(inv.Error(), "privileged") {
			t.Errorf("queue %s: %v does not give the library's reason", q, err)
		}
	}
	hostNet := job(uniq("hostnet"), root+"/base")
	hostNet.Spec.Template.Spec.HostNetwork = true
	hostNet.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}}}
	_, _, _, err := js.Submit(ctx, hostNet, false)
	if got, want := fieldsOf(t, err), []string{"spec.template.spec: Forbidden", "spec.template.spec: Forbidden"}; !slices.Equal(got, want) {
		t.Errorf("hostNetwork and hostPath: errors %v, want %v", got, want)
	}
	if err != nil && (!strings.Contains(err.Error(), "host namespaces") || !strings.Contains(err.Error(), "hostPath volumes")) {
		t.Errorf("hostNetwork and hostPath: %v lacks the library's reasons", err)
	}
	// A plain container passes baseline (the default) but not restricted.
	if _, _, _, err := js.Submit(ctx, job(uniq("plain"), root+"/base"), false); err != nil {
		t.Errorf("plain container in a baseline queue: %v", err)
	}
	_, _, _, err = js.Submit(ctx, job(uniq("plain"), root+"/tight"), false)
	if got := fieldsOf(t, err); len(got) == 0 || got[0] != "spec.template.spec.containers[0]: Forbidden" {
		t.Errorf("plain container in a restricted queue: %v", got)
	}
	// Each role's template is checked, under its own path.
	roles := testjob.New(uniq("mpi")).Queue(root+"/base").Role("launcher", 1, 0, "busybox").Role("worker", 2, 8, "busybox").Obj()
	roles.Spec.Roles[1].Template.Spec.HostPID = true
	_, _, _, err = js.Submit(ctx, roles, false)
	if got, want := fieldsOf(t, err), []string{"spec.roles[1].template.spec: Forbidden"}; !slices.Equal(got, want) {
		t.Errorf("roles: errors %v, want %v", got, want)
	}
}

// TestBatchChecksEachJobAtItsQueuesLevel: a batch reads each queue's level
// once for all its jobs, and judges every job at its own queue's level.
func TestBatchChecksEachJobAtItsQueuesLevel(t *testing.T) {
	ctx, root := testCtx(t), uniq("pssb")
	js, qs := services(t, nil)
	for _, q := range []*v1alpha1.Queue{
		testqueue.New(root).PodSecurity(v1alpha1.PodSecurityPrivileged).Obj(),
		testqueue.New(root + "/open").Obj(),
		testqueue.New(root + "/base").PodSecurity(v1alpha1.PodSecurityBaseline).Obj(),
	} {
		if _, _, err := qs.Create(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var items []jobs.BatchItem
	for i := range 6 {
		q := root + "/open"
		if i%2 == 1 {
			q = root + "/base"
		}
		j := job(uniq("priv"), q)
		yes := true
		j.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
		items = append(items, jobs.BatchItem{In: j})
	}
	js.SubmitBatchAs(ctx, items, "alice", false)
	for i, it := range items {
		if refused := it.Err != nil; refused != (i%2 == 1) {
			t.Errorf("item %d in %s: err %v, want refused only in the baseline queue", i, it.In.Spec.Queue, it.Err)
		}
	}
}

// TestSubmitChecksTheLevelItIsWrittenAt: a queue's pod-security level
// tightened after a submission was admitted and before it is written
// refuses the job (single and batched), and stores nothing: the write is
// guarded on the queue as it was read for the check. Before, the write
// read the queue's revision again and stored a job the queue's new level
// forbids.
func TestSubmitChecksTheLevelItIsWrittenAt(t *testing.T) {
	ctx, name := testCtx(t), uniq("pssw")
	js, qs := services(t, nil)
	if _, _, err := qs.Create(ctx, testqueue.New(name).PodSecurity(v1alpha1.PodSecurityBaseline).Obj()); err != nil {
		t.Fatal(err)
	}
	level := v1alpha1.PodSecurityBaseline
	set := func(l v1alpha1.PodSecurityLevel) {
		q, rev, err := qs.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		q.Spec.PodSecurity = l
		if _, _, err := qs.Update(ctx, q, rev); err != nil {
			t.Fatal(err)
		}
	}
	js.BeforeWrite(func() {
		if level == v1alpha1.PodSecurityBaseline {
			set(v1alpha1.PodSecurityRestricted)
			level = v1alpha1.PodSecurityRestricted
		}
	})
	// A plain container passes baseline, not restricted.
	one := job(uniq("plain"), name)
	_, _, _, err := js.Submit(ctx, one, false)
	if got := fieldsOf(t, err); len(got) == 0 || got[0] != "spec.template.spec.containers[0]: Forbidden" {
		t.Errorf("single: errors %v (%v), want the container Forbidden at the new level", got, err)
	}
	if _, _, err := js.Get(ctx, one.Name); err == nil {
		t.Errorf("single: job %s stored though its queue now forbids it", one.Name)
	}

	set(v1alpha1.PodSecurityBaseline)
	level = v1alpha1.PodSecurityBaseline
	items := []jobs.BatchItem{{In: job(uniq("plain-a"), name)}, {In: job(uniq("plain-b"), name)}}
	js.SubmitBatchAs(ctx, items, "alice", false)
	for i, it := range items {
		if got := fieldsOf(t, it.Err); len(got) == 0 || got[0] != "spec.template.spec.containers[0]: Forbidden" {
			t.Errorf("batch item %d: errors %v (%v), want the container Forbidden at the new level", i, got, it.Err)
		}
		if _, _, err := js.Get(ctx, it.In.Name); err == nil {
			t.Errorf("batch item %d: job %s stored though its queue now forbids it", i, it.In.Name)
		}
	}
}
