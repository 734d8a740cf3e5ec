// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// InvalidError is an object that failed validation: every problem, each
// with its field path. The hub returns it as gRPC InvalidArgument.
//
// +kubebuilder:object:generate=false
type InvalidError struct {
	// Kind and Name of the object.
	Kind, Name string
	// Errs lists every problem found.
	Errs field.ErrorList
}

// Error lists the problems, one per line after the first.
func (e *InvalidError) Error() string {
	var b strings.Builder
	if e.Name == "" {
		fmt.Fprintf(&b, "%s is invalid", e.Kind)
	} else {
		fmt.Fprintf(&b, "%s %q is invalid", e.Kind, e.Name)
	}
	if len(e.Errs) == 1 {
		fmt.Fprintf(&b, ": %s", e.Errs[0].Error())
		return b.String()
	}
	fmt.Fprintf(&b, " (%d problems):", len(e.Errs))
	for _, fe := range e.Errs {
		fmt.Fprintf(&b, "\n  * %s", fe.Error())
	}
	return b.String()
}

// NewInvalidError wraps errs as an *InvalidError, or returns nil when errs is empty.
func NewInvalidError(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return &InvalidError{Kind: kind, Name: name, Errs: errs}
}
