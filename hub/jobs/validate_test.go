// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// fieldsOf renders an InvalidError's errors as "path: Type".
func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	var inv *v1alpha1.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("got %v, want an InvalidError", err)
	}
	out := make([]string, 0, len(inv.Errs))
	for _, e := range inv.Errs {
		out = append(out, e.Field+": "+e.Type.String())
	}
	return out
}

// countingValidator refuses every image other than busybox and counts its calls.
type countingValidator struct {
	calls int
	err   error // returned instead of judging, when set
}

func (v *countingValidator) Validate(_ context.Context, tpl *corev1.PodTemplateSpec) error {
	v.calls++
	if v.err != nil {
		return v.err
	}
	var fe field.ErrorList
	for i, c := range tpl.Spec.Containers {
		if c.Image != "busybox" {
			fe = append(fe, field.Invalid(field.NewPath("spec", "containers").Index(i).Child("image"), c.Image, "bad image"))
		}
	}
	return v1alpha1.NewInvalidError("PodTemplate", "", fe)
}

// TestSubmitOneRound: spec and template errors come back together, spec
// first, the template's under spec.template; a template with no containers
// is not sent to the validator; an error already reported by the spec
// validation is not repeated.
func TestSubmitOneRound(t *testing.T) {
	ctx, q := testCtx(t), uniq("round")
	v := &countingValidator{}
	js, _ := services(t, []jobs.Option{jobs.WithTemplateValidator(v)}, q)

	bad := job("7b-"+uniq("x"), q)
	bad.Spec.Gang.Members = 0
	bad.Spec.Template.Spec.Containers[0].Image = "UPPER CASE"
	_, _, _, err := js.Submit(ctx, bad, false)
	want := []string{"metadata.name: Invalid value", "spec.gang.members: Invalid value",
		"spec.template.spec.containers[0].image: Invalid value"}
	if got := fieldsOf(t, err); !slices.Equal(got, want) {
		t.Errorf("errors %v, want %v", got, want)
	}
	if v.calls != 1 {
		t.Errorf("validator called %d times, want once", v.calls)
	}

	empty := job(uniq("empty"), q)
	empty.Spec.Template.Spec.Containers = nil
	_, _, _, err = js.Submit(ctx, empty, false)
	if got, want := fieldsOf(t, err), []string{"spec.template.spec.containers: Required value"}; !slices.Equal(got, want) {
		t.Errorf("no containers: errors %v, want %v", got, want)
	}
	if v.calls != 1 {
		t.Errorf("a template without containers was sent to the validator")
	}

	// The template validator repeating a path and type the spec check already reported.
	dup := &countingValidator{err: v1alpha1.NewInvalidError("PodTemplate", "", field.ErrorList{
		field.Forbidden(field.NewPath("spec", "nodeName"), "again"),
		field.Invalid(field.NewPath("spec", "containers").Index(0).Child("image"), "x", "bad image")})}
	js2, _ := services(t, []jobs.Option{jobs.WithTemplateValidator(dup)})
	j := job(uniq("dup"), q)
	j.Spec.Template.Spec.NodeName = "n1"
	_, _, _, err = js2.Submit(ctx, j, false)
	want = []string{"spec.template.spec.nodeName: Forbidden", "spec.template.spec.containers[0].image: Invalid value"}
	if got := fieldsOf(t, err); !slices.Equal(got, want) {
		t.Errorf("duplicates: errors %v, want %v", got, want)
	}
}

// TestSubmitTemplateUnavailable: an unavailable hub cluster keeps a job
// with a valid spec Unavailable; a job with spec errors is refused with
// them, as those are final whatever the template holds.
func TestSubmitTemplateUnavailable(t *testing.T) {
	ctx, q := testCtx(t), uniq("unavail")
	v := &countingValidator{err: errs.Unavailable("the hub cluster", errors.New("connection refused"))}
	js, _ := services(t, []jobs.Option{jobs.WithTemplateValidator(v)}, q)

	if _, _, _, err := js.Submit(ctx, job(uniq("ok"), q), false); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("valid spec, hub cluster down: %v, want ErrUnavailable", err)
	}
	bad := job(uniq("bad"), q)
	bad.Spec.Gang.GPUsPerMember = 0
	_, _, _, err := js.Submit(ctx, bad, false)
	if errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("invalid spec, hub cluster down: %v, want the spec errors", err)
	}
	if got, want := fieldsOf(t, err), []string{"spec.gang.gpusPerMember: Invalid value"}; !slices.Equal(got, want) {
		t.Errorf("errors %v, want %v", got, want)
	}
	if v.calls != 2 {
		t.Errorf("validator called %d times, want 2", v.calls)
	}
}

// TestSubmitOneRoundDryRun: with the real Kubernetes validator, a job
// whose name, spec and template are all wrong gets every error in one
// response.
func TestSubmitOneRoundDryRun(t *testing.T) {
	cs := kubeClient(t)
	ctx, q := testCtx(t), uniq("k8s1")
	js, _ := services(t, []jobs.Option{jobs.WithTemplateValidator(jobs.NewDryRunValidator(cs, ""))}, q)
	bad := job("1-"+uniq("bad"), q)
	bad.Spec.Placement.MaxClusters = -1
	c := &bad.Spec.Template.Spec.Containers[0]
	c.Name = "Not_A_DNS_Label"
	c.ImagePullPolicy = "Sometimes"
	_, _, _, err := js.Submit(ctx, bad, false)
	got := fieldsOf(t, err)
	t.Logf("refusal: %v", err)
	for _, want := range []string{"metadata.name: Invalid value", "spec.placement.maxClusters: Invalid value",
		"spec.template.spec.containers[0].name: Invalid value", "spec.template.spec.containers[0].imagePullPolicy: Unsupported value"} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %q in %v", want, got)
		}
	}
	if _, _, err := js.Get(ctx, bad.Name); err == nil {
		t.Error("a rejected job was stored")
	}
}

// TestSubmitRolesTemplates: every role's template goes to the validator,
// its errors under spec.roles[i].template.
func TestSubmitRolesTemplates(t *testing.T) {
	ctx, q := testCtx(t), uniq("roles")
	v := &countingValidator{}
	js, _ := services(t, []jobs.Option{jobs.WithTemplateValidator(v)}, q)
	j := testjob.New(uniq("mpi")).Queue(q).Role("launcher", 1, 0, "busybox").Role("worker", 2, 8, "UPPER CASE").Obj()
	_, _, _, err := js.Submit(ctx, j, false)
	if got, want := fieldsOf(t, err), []string{"spec.roles[1].template.spec.containers[0].image: Invalid value"}; !slices.Equal(got, want) {
		t.Errorf("errors %v, want %v", got, want)
	}
	if v.calls != 2 {
		t.Errorf("validator called %d times, want once per role", v.calls)
	}
	ok := testjob.New(uniq("mpi")).Queue(q).Role("launcher", 1, 0, "busybox").Role("worker", 2, 8, "busybox").Obj()
	if _, _, _, err := js.Submit(ctx, ok, false); err != nil {
		t.Errorf("a valid job with roles: %v", err)
	}
}
