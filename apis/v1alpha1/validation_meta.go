// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateTypeMeta checks apiVersion and kind when they are set.
func validateTypeMeta(tm metav1.TypeMeta, kind string) field.ErrorList {
	var errs field.ErrorList
	if tm.APIVersion != "" && tm.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), tm.APIVersion, []string{APIVersion}))
	}
	if tm.Kind != "" && tm.Kind != kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), tm.Kind, []string{kind}))
	}
	return errs
}

// validateObjectMeta checks the name with nameFn and refuses a namespace:
// Shoal's objects are cluster-scoped (a Job's scope is its queue).
func validateObjectMeta(m *metav1.ObjectMeta, nameFn func(string, *field.Path) field.ErrorList) field.ErrorList {
	p := field.NewPath("metadata")
	var errs field.ErrorList
	if m.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "every object needs a name"))
	} else {
		errs = append(errs, nameFn(m.Name, p.Child("name"))...)
	}
	errs = append(errs, metav1validation.ValidateLabels(m.Labels, p.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(m.Annotations, p.Child("annotations"))...)
	if m.Namespace != "" {
		errs = append(errs, field.Forbidden(p.Child("namespace"),
			"Shoal objects are not namespaced; a job's scope is its spec.queue"))
	}
	return errs
}

// ValidateJobName checks a Job name: a DNS-1123 label (lower-case
// alphanumerics and '-', at most 63 characters), so that it can name the
// member pods and label them.
func ValidateJobName(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// ValidateQueueName checks a hierarchical queue name: one to MaxQueueDepth
// segments separated by '/', each a DNS-1123 label ("research",
// "research/nlp", "research/nlp/llama").
func ValidateQueueName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "a queue name such as org/team/project")}
	}
	segs := strings.Split(name, "/")
	if len(segs) > MaxQueueDepth {
		return field.ErrorList{field.Invalid(p, name,
			fmt.Sprintf("must have at most %d segments (org/team/project)", MaxQueueDepth))}
	}
	var errs field.ErrorList
	for i, s := range segs {
		if s == "" {
			errs = append(errs, field.Invalid(p, name, fmt.Sprintf("segment %d is empty", i+1)))
			continue
		}
		for _, msg := range validation.IsDNS1123Label(s) {
			errs = append(errs, field.Invalid(p, name, fmt.Sprintf("segment %q: %s", s, msg)))
		}
	}
	return errs
}
