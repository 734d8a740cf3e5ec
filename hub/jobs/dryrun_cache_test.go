// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/jobs"
)

func TestCachedValidatorReusesVerdicts(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(time.Now())
	var calls atomic.Int32
	unavailable := true
	next := validatorFunc(func(_ context.Context, tm *corev1.PodTemplateSpec) error {
		calls.Add(1)
		switch tm.Spec.Containers[0].Image {
		case "bad":
			return v1alpha1.NewInvalidError("PodTemplate", "", field.ErrorList{field.Invalid(field.NewPath("spec", "containers").Index(0).Child("image"), "bad", "no")})
		case "flaky":
			if unavailable {
				return errs.Unavailable("the hub cluster", errors.New("down"))
			}
		}
		return nil
	})
	c := jobs.NewCachedValidator(next, time.Minute, 2, clk)
	tmpl := func(image string) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}}}
	}
	var wg sync.WaitGroup
	for range 20 { // concurrent callers of one new template: one dry-run
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Validate(ctx, tmpl("ok")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("%d dry-runs for one template, want 1", n)
	}
	for range 2 {
		var inv *v1alpha1.InvalidError
		if err := c.Validate(ctx, tmpl("bad")); !errors.As(err, &inv) {
			t.Errorf("bad template: %v", err)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d dry-runs after a refused template twice, want 2", n)
	}
	// A failure to judge is not kept.
	if err := c.Validate(ctx, tmpl("flaky")); !errors.Is(err, errs.ErrUnavailable) {
		t.Errorf("unavailable: %v", err)
	}
	unavailable = false
	if err := c.Validate(ctx, tmpl("flaky")); err != nil {
		t.Errorf("after the hub cluster is back: %v", err)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("%d dry-runs, want 4 (the unavailable one asked again)", n)
	}
	// Past the TTL the template is judged again.
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	if err := c.Validate(ctx, tmpl("ok")); err != nil {
		t.Error(err)
	}
	if n := calls.Load(); n != 5 {
		t.Errorf("%d dry-runs, want 5 (expired verdict)", n)
	}
}
