// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateQueue returns every problem of a Queue, each with its field path.
func ValidateQueue(q *Queue) field.ErrorList {
	errs := validateTypeMeta(q.TypeMeta, KindQueue)
	errs = append(errs, validateObjectMeta(&q.ObjectMeta, ValidateQueueName)...)
	p := field.NewPath("spec")
	if w := q.Spec.Weight; w != nil && *w <= 0 {
		errs = append(errs, field.Invalid(p.Child("weight"), *w, "must be greater than 0"))
	}
	if l := q.Spec.PodSecurity; l != "" && !l.Valid() {
		errs = append(errs, field.NotSupported(p.Child("podSecurity"), l, PodSecurityLevels()))
	}
	errs = append(errs, validateQueuePools(q.Spec.Pools, p.Child("pools"))...)
	for _, class := range slices.Sorted(maps.Keys(q.Spec.Quotas)) {
		quota := q.Spec.Quotas[class]
		kp := p.Child("quotas").Key(class)
		if msgs := validation.IsDNS1123Subdomain(class); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(kp, class, "GPU class "+msg))
			}
		} else if !KnownGPUClass(class) {
			errs = append(errs, field.NotSupported(kp, class, GPUClassNames()))
		}
		if quota.Nominal < 0 {
			errs = append(errs, field.Invalid(kp.Child("nominal"), quota.Nominal, "must not be negative"))
		}
		if b := quota.BorrowingLimit; b != nil && *b < 0 {
			errs = append(errs, field.Invalid(kp.Child("borrowingLimit"), *b, "must not be negative"))
		}
	}
	return errs
}
