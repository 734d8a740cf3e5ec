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

// MaxJobNameLength is the longest Job name. The hub builds names from it:
//
//   - ServiceName(job) = job, the headless Service: a DNS-1035 label (a
//     letter first, at most 63 characters);
//   - the LabelJob value = job: at most 63 characters;
//   - MemberHostname(job, index) = "<job>-<index>", every member's
//     spec.hostname: a DNS-1123 label of at most 63 characters for every
//     index a valid gang has (up to MaxGangMembers-1 = 99999, five digits),
//     hence 63 - len("-99999") = 57;
//   - MemberPodName(job, epoch, index) = "<job>-e<epoch>-<index>", a pod
//     name (DNS-1123 subdomain, at most 253): at most 57+2+19+1+5 = 84
//     characters for any int64 epoch, so epochs may grow without bound.
//
// TestJobNameLimits checks each of these at the limits.
const MaxJobNameLength = validation.DNS1123LabelMaxLength - len("-") - maxMemberIndexDigits

// maxMemberIndexDigits is the digits of the largest member index,
// MaxGangMembers-1.
const maxMemberIndexDigits = 5

// ValidateJobName checks a Job name: a DNS-1035 label (lower-case
// alphanumerics and '-', a letter first) of at most MaxJobNameLength
// characters, so that every name the hub builds from it (Service, member
// host and pod names, label values; see MaxJobNameLength) is valid.
func ValidateJobName(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(name) > MaxJobNameLength {
		e := field.TooLong(p, name, MaxJobNameLength)
		e.Detail = fmt.Sprintf("must be no more than %d characters: member host names <name>-<index> must stay "+
			"within %d for gangs of up to %d members", MaxJobNameLength, validation.DNS1123LabelMaxLength, MaxGangMembers)
		errs = append(errs, e)
	}
	for _, msg := range validation.IsDNS1035Label(name) {
		if msg == validation.MaxLenError(validation.DNS1035LabelMaxLength) {
			continue // reported above with the tighter limit
		}
		errs = append(errs, field.Invalid(p, name, msg+" (a job name also names its headless Service)"))
	}
	return errs
}

// ValidateQueueName checks a hierarchical queue name: one to MaxQueueDepth
// segments separated by '/', each a DNS-1123 label ("research",
// "research/nlp", "research/nlp/llama"). The hub uses the name as a store
// key and a metrics label only; with its '/' and up to 191 characters it is
// not a valid Kubernetes label value or name, so code that puts it on an
// object must encode it.
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
