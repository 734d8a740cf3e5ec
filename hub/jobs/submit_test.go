// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/store"
)

func TestSubmitStoresPendingAndIsIdempotent(t *testing.T) {
	ctx, q := testCtx(t), uniq("org")+"/nlp"
	js, _ := services(t, nil, q)
	name := uniq("llama")
	j, rev, res, err := js.Submit(ctx, job(name, q), false)
	if err != nil || res != jobs.Created {
		t.Fatalf("submit: %v, %v", res, err)
	}
	if j.Status.Phase != v1alpha1.JobPending || j.Status.SubmitTime == nil || j.UID == "" ||
		j.Annotations[v1alpha1.AnnotationSpecHash] == "" || len(j.Status.Conditions) != 1 {
		t.Errorf("stored job %+v", j)
	}
	got, grev, err := js.Get(ctx, name)
	if err != nil || grev != rev || got.UID != j.UID || got.Spec.Placement.MaxClusters != 1 {
		t.Fatalf("get: rev %d/%d, %v", grev, rev, err)
	}
	// The submit time is stored to the microsecond (the pending order and
	// the admission wait count from it), not to the second.
	if d := j.Status.SubmitTime.Sub(got.Status.SubmitTime.Time.Time); d < 0 || d >= time.Microsecond {
		t.Errorf("stored submitTime %s, accepted at %s: want it to the microsecond",
			got.Status.SubmitTime.Format(time.RFC3339Nano), j.Status.SubmitTime.Format(time.RFC3339Nano))
	}
	again, arev, res, err := js.Submit(ctx, job(name, q), false)
	if err != nil || res != jobs.Existing || arev != rev || again.UID != j.UID {
		t.Errorf("resubmit: %v, rev %d want %d, %v", res, arev, rev, err)
	}
	diff := job(name, q)
	diff.Spec.Gang.Members = 4
	_, _, _, err = js.Submit(ctx, diff, false)
	if !errors.Is(err, store.ErrAlreadyExists) || !strings.Contains(err.Error(), "different spec") {
		t.Errorf("different spec: %v", err)
	}
}

func TestSubmitRefusals(t *testing.T) {
	ctx, q := testCtx(t), uniq("org")
	js, _ := services(t, nil, q)

	_, _, _, err := js.Submit(ctx, job(uniq("a"), "no/such/queue"), false)
	if !errors.Is(err, errs.ErrFailedPrecondition) || !strings.Contains(err.Error(), `"no/such/queue"`) ||
		!strings.Contains(err.Error(), "shoal queue create") {
		t.Errorf("unknown queue: %v", err)
	}

	bad := job("Bad_Name", q)
	bad.Spec.Gang.Members, bad.Spec.Placement.Policy = 0, "Random"
	_, _, _, err = js.Submit(ctx, bad, false)
	var inv *v1alpha1.InvalidError
	if !errors.As(err, &inv) || len(inv.Errs) != 3 {
		t.Fatalf("invalid job: %v", err)
	}

	name := uniq("dry")
	if _, rev, res, err := js.Submit(ctx, job(name, q), true); err != nil || res != jobs.DryRun || rev != 0 {
		t.Errorf("dry run: %v %d %v", res, rev, err)
	}
	if _, _, err := js.Get(ctx, name); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("dry run stored the job: %v", err)
	}
	if _, _, _, err := js.Submit(ctx, job(uniq("dry"), "no-such-queue"), true); !errors.Is(err, errs.ErrFailedPrecondition) {
		t.Errorf("a dry run into an unknown queue: %v, want FailedPrecondition as a submit", err)
	}
}

// validatorFunc adapts a function to jobs.TemplateValidator.
type validatorFunc func(context.Context, *corev1.PodTemplateSpec) error

func (f validatorFunc) Validate(ctx context.Context, t *corev1.PodTemplateSpec) error {
	return f(ctx, t)
}

func TestSubmitTemplateValidator(t *testing.T) {
	ctx, q := testCtx(t), uniq("org")
	reject := validatorFunc(func(_ context.Context, tpl *corev1.PodTemplateSpec) error {
		if tpl.Spec.Containers[0].Image == "busybox" {
			return nil
		}
		return v1alpha1.NewInvalidError("PodTemplate", "", field.ErrorList{
			field.Invalid(field.NewPath("spec", "containers").Index(0).Child("image"), tpl.Spec.Containers[0].Image, "bad image")})
	})
	js, _ := services(t, []jobs.Option{jobs.WithTemplateValidator(reject)}, q)
	if _, _, _, err := js.Submit(ctx, job(uniq("ok"), q), false); err != nil {
		t.Fatalf("accepted template refused: %v", err)
	}
	j := job(uniq("bad"), q)
	j.Spec.Template.Spec.Containers[0].Image = "UPPER CASE"
	_, _, _, err := js.Submit(ctx, j, false)
	var inv *v1alpha1.InvalidError
	if !errors.As(err, &inv) || inv.Errs[0].Field != "spec.template.spec.containers[0].image" {
		t.Fatalf("rejected template: %v", err)
	}

	broken := validatorFunc(func(context.Context, *corev1.PodTemplateSpec) error { return errors.New("hub cluster down") })
	js2, _ := services(t, []jobs.Option{jobs.WithTemplateValidator(broken)})
	_, _, _, err = js2.Submit(ctx, job(uniq("x"), q), false)
	if err == nil || errors.As(err, &inv) {
		t.Errorf("validator failure must not read as an invalid job: %v", err)
	}
}
