// SPDX-License-Identifier: Apache-2.0

package models_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/models"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/hubtest"
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(hubtest.Run(m, "models"))
}

// fakeJobs serves jobs by name.
type fakeJobs map[string]*v1alpha1.Job

func (f fakeJobs) Get(_ context.Context, name string) (*v1alpha1.Job, int64, error) {
	if j, ok := f[name]; ok {
		return j.DeepCopy(), 1, nil
	}
	return nil, 0, store.ErrNotFound
}

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func version(model, v string, mutate ...func(*v1alpha1.ModelVersion)) *v1alpha1.ModelVersion {
	m := &v1alpha1.ModelVersion{Spec: v1alpha1.ModelVersionSpec{Model: model, Version: v,
		ArtifactURI: "s3://models/" + model + "/" + v, Digest: digest, Framework: "pytorch"}}
	for _, f := range mutate {
		f(m)
	}
	return m
}

func TestRegisterAndLineage(t *testing.T) {
	e := hubtest.New(t)
	ctx := e.Ctx
	pre := fmt.Sprintf("m%d", time.Now().UnixNano()%1e9)
	ckpt := &v1alpha1.JobCheckpoint{Step: 1200, URI: "s3://ckpt/sft/step-1200", Time: metav1.NewTime(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)), Count: 3}
	jobs := fakeJobs{
		"pretrain": {ObjectMeta: metav1.ObjectMeta{Name: "pretrain", UID: "u1"}, Spec: v1alpha1.JobSpec{Queue: "research/nlp"},
			Status: v1alpha1.JobStatus{Owner: "alice", Phase: v1alpha1.JobSucceeded}},
		"sft": {ObjectMeta: metav1.ObjectMeta{Name: "sft", UID: "u2"}, Spec: v1alpha1.JobSpec{Queue: "research/nlp"},
			Status: v1alpha1.JobStatus{Owner: "bob", Phase: v1alpha1.JobRunning, Checkpoint: ckpt}},
	}
	ms := models.New(e.Store, jobs)
	base := version(pre+"-base", "1.0", func(m *v1alpha1.ModelVersion) { m.Spec.Source = &v1alpha1.ModelSource{Job: "pretrain"} })
	got, _, res, err := ms.Register(ctx, base, "alice", nil)
	if err != nil || res != models.Created {
		t.Fatalf("register base: %v %v", res, err)
	}
	if got.Name != pre+"-base@1.0" || got.Status.RegisteredBy != "alice" || got.Status.Job == nil || got.Status.Job.UID != "u1" ||
		got.Status.Job.Owner != "alice" || got.Status.Checkpoint != nil {
		t.Fatalf("base stored as %+v", got)
	}
	// The same spec again: the stored one; another spec: refused.
	if _, _, res, err := ms.Register(ctx, base, "carol", nil); err != nil || res != models.Existing {
		t.Fatalf("repeat: %v %v", res, err)
	}
	changed := base.DeepCopy()
	changed.Spec.ArtifactURI = "s3://elsewhere"
	if _, _, _, err := ms.Register(ctx, changed, "alice", nil); !errors.Is(err, store.ErrAlreadyExists) || !strings.Contains(err.Error(), "never change") {
		t.Fatalf("changed spec: %v", err)
	}
	// A fine-tune from the SFT job's latest checkpoint, derived from base.
	step := int64(1200)
	chat := version(pre+"-chat", "2.0", func(m *v1alpha1.ModelVersion) {
		m.Spec.Source = &v1alpha1.ModelSource{Job: "sft", CheckpointStep: &step}
		m.Spec.Parent = pre + "-base@1.0"
	})
	if _, _, _, err := ms.Register(ctx, chat, "bob", nil); err != nil {
		t.Fatal(err)
	}
	lin, err := ms.Lineage(ctx, pre+"-chat@2.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(lin) != 2 || lin[0].Name != pre+"-chat@2.0" || lin[1].Name != pre+"-base@1.0" {
		t.Fatalf("lineage %v", names(lin))
	}
	if c := lin[0].Status.Checkpoint; c == nil || c.Step != 1200 || c.URI != ckpt.URI || lin[0].Status.Job.Name != "sft" {
		t.Fatalf("chat's source %+v / %+v", lin[0].Status.Job, c)
	}
	if vs, _, err := ms.List(ctx, pre+"-chat"); err != nil || len(vs) != 1 {
		t.Fatalf("list chat: %d %v", len(vs), err)
	}

	// Refusals, each storing nothing.
	other := int64(900)
	for _, tc := range []struct {
		name string
		m    *v1alpha1.ModelVersion
		auth func(*v1alpha1.Job) error
		want error
		msg  string
	}{
		{"missing parent", version(pre+"-x", "1", func(m *v1alpha1.ModelVersion) { m.Spec.Parent = pre + "-nope@1" }), nil, errs.ErrFailedPrecondition, "not registered"},
		{"missing job", version(pre+"-x", "2", func(m *v1alpha1.ModelVersion) { m.Spec.Source = &v1alpha1.ModelSource{Job: "gone"} }), nil, errs.ErrFailedPrecondition, "not found"},
		{"not the latest step", version(pre+"-x", "3", func(m *v1alpha1.ModelVersion) {
			m.Spec.Source = &v1alpha1.ModelSource{Job: "sft", CheckpointStep: &other}
		}), nil, errs.ErrFailedPrecondition, "latest checkpoint is step 1200"},
		{"a step of a job without checkpoints", version(pre+"-x", "4", func(m *v1alpha1.ModelVersion) {
			m.Spec.Source = &v1alpha1.ModelSource{Job: "pretrain", CheckpointStep: &other}
		}), nil, errs.ErrFailedPrecondition, "reported no checkpoint"},
		{"job not readable", version(pre+"-x", "5", func(m *v1alpha1.ModelVersion) { m.Spec.Source = &v1alpha1.ModelSource{Job: "sft"} }),
			func(*v1alpha1.Job) error { return errs.Of(errs.ErrPermissionDenied, "no") }, errs.ErrPermissionDenied, "no"},
	} {
		_, _, _, err := ms.Register(ctx, tc.m, "dave", tc.auth)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	var inv *v1alpha1.InvalidError
	bad := version("Bad_Model", "", func(m *v1alpha1.ModelVersion) { m.Spec.Digest = "md5:x"; m.Spec.ArtifactURI = "rel/path" })
	if _, _, _, err := ms.Register(ctx, bad, "dave", nil); !errors.As(err, &inv) || len(inv.Errs) != 4 {
		t.Errorf("invalid version: %v", err)
	}
	if vs, _, err := ms.List(ctx, pre+"-x"); err != nil || len(vs) != 0 {
		t.Errorf("refused registrations stored %d versions (%v)", len(vs), err)
	}
	if _, err := ms.Lineage(ctx, pre+"-none@1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("lineage of a missing version: %v", err)
	}
}

func names(ms []*v1alpha1.ModelVersion) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}
