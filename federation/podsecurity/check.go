// SPDX-License-Identifier: Apache-2.0

// Package podsecurity checks pod specs against a Pod Security Standards
// level with the upstream evaluator (k8s.io/pod-security-admission), the
// same checks a workload cluster's admission runs. The hub checks every pod
// template at submit and the agent checks every pod before it creates it,
// so both use this one function.
package podsecurity

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

var (
	evalOnce sync.Once
	eval     policy.Evaluator
	evalErr  error
)

// evaluator is the upstream evaluator with the default checks, built once.
func evaluator() (policy.Evaluator, error) {
	evalOnce.Do(func() { eval, evalErr = policy.NewEvaluator(policy.DefaultChecks(), nil) })
	return eval, evalErr
}

// Check evaluates the pod (meta and spec) at level with the latest version
// of the standard and returns one field error per violated check under specPath
// (the path of spec): the checks of one container at
// specPath.containers[i] (initContainers[i]), the pod-level ones (host
// namespaces, volumes, pod security context) at specPath itself. Each error
// is Forbidden with the library's reason and detail. An unknown level is
// checked as restricted.
func Check(level v1alpha1.PodSecurityLevel, meta *metav1.ObjectMeta, spec *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	ev, err := evaluator()
	if err != nil { // the default checks are fixed; this cannot fail at run time
		return field.ErrorList{field.InternalError(specPath, fmt.Errorf("pod security evaluator: %w", err))}
	}
	if !level.Valid() {
		level = v1alpha1.PodSecurityRestricted
	}
	lv := psaapi.LevelVersion{Level: psaLevel(level), Version: psaapi.LatestVersion()}
	if meta == nil {
		meta = &metav1.ObjectMeta{}
	}
	podOnly := spec.DeepCopy()
	podOnly.Containers, podOnly.InitContainers, podOnly.EphemeralContainers = nil, nil, nil
	podReasons := map[string]bool{}
	var errs field.ErrorList
	for _, r := range forbidden(ev, lv, meta, podOnly) {
		podReasons[r.ForbiddenReason] = true
		errs = append(errs, forbid(specPath, level, r))
	}
	one := func(path *field.Path, c corev1.Container, init bool) {
		s := podOnly.DeepCopy()
		if init {
			s.InitContainers = []corev1.Container{c}
		} else {
			s.Containers = []corev1.Container{c}
		}
		for _, r := range forbidden(ev, lv, meta, s) {
			if !podReasons[r.ForbiddenReason] {
				errs = append(errs, forbid(path, level, r))
			}
		}
	}
	for i, c := range spec.InitContainers {
		one(specPath.Child("initContainers").Index(i), c, true)
	}
	for i, c := range spec.Containers {
		one(specPath.Child("containers").Index(i), c, false)
	}
	return errs
}

// Violation is Check's errors as one message ("" when the pod passes), for
// the agent's refusal of a member.
func Violation(level v1alpha1.PodSecurityLevel, meta *metav1.ObjectMeta, spec *corev1.PodSpec) string {
	errs := Check(level, meta, spec, field.NewPath("spec"))
	if len(errs) == 0 {
		return ""
	}
	return errs.ToAggregate().Error()
}

func forbidden(ev policy.Evaluator, lv psaapi.LevelVersion, meta *metav1.ObjectMeta, spec *corev1.PodSpec) []policy.CheckResult {
	var out []policy.CheckResult
	for _, r := range ev.EvaluatePod(lv, meta, spec) {
		if !r.Allowed {
			out = append(out, r)
		}
	}
	return out
}

func forbid(path *field.Path, level v1alpha1.PodSecurityLevel, r policy.CheckResult) *field.Error {
	msg := fmt.Sprintf("violates pod security level %q: %s", level, r.ForbiddenReason)
	if r.ForbiddenDetail != "" {
		msg += " (" + r.ForbiddenDetail + ")"
	}
	return field.Forbidden(path, msg)
}

// psaLevel maps a level to the library's; unknown is restricted.
func psaLevel(l v1alpha1.PodSecurityLevel) psaapi.Level {
	switch l {
	case v1alpha1.PodSecurityPrivileged:
		return psaapi.LevelPrivileged
	case v1alpha1.PodSecurityBaseline:
		return psaapi.LevelBaseline
	default:
		return psaapi.LevelRestricted
	}
}
