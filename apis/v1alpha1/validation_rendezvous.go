// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateRendezvous checks spec.rendezvous; zero values are unset and
// take their defaults.
func validateRendezvous(r *Rendezvous, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.Port < 0 || r.Port > 65535 {
		errs = append(errs, field.Invalid(p.Child("port"), r.Port, "must be a port number, 1 to 65535"))
	}
	if r.ProcessesPerMember < 0 || r.ProcessesPerMember > MaxProcessesPerMember {
		errs = append(errs, field.Invalid(p.Child("processesPerMember"), r.ProcessesPerMember,
			fmt.Sprintf("must be 1 to %d", MaxProcessesPerMember)))
	}
	return errs
}

// reservedEnv is ReservedEnvNames as a set.
var reservedEnv = sets.New(ReservedEnvNames...)

// validateReservedEnv refuses containers that set a variable of the
// rendezvous contract themselves: Shoal sets each of them on every member,
// and two values for one name would leave the user guessing which one the
// process sees.
func validateReservedEnv(cs []corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		for k, e := range c.Env {
			if reservedEnv.Has(e.Name) {
				errs = append(errs, field.Forbidden(p.Index(i).Child("env").Index(k).Child("name"), fmt.Sprintf(
					"%s is set by Shoal on every member (docs/rendezvous.md); reserved names: %s",
					e.Name, strings.Join(ReservedEnvNames, ", "))))
			}
		}
	}
	return errs
}
