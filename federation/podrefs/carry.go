// SPDX-License-Identifier: Apache-2.0

package podrefs

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// NotCarriedError says why a referenced object that exists is not carried
// to workload clusters.
type NotCarriedError struct {
	Kind   Kind
	Name   string
	Reason string
}

func (e *NotCarriedError) Error() string {
	return fmt.Sprintf("%s %q is not carried to workload clusters: %s", e.Kind, e.Name, e.Reason)
}

// CheckSecret refuses the Secrets that are never copied out of the hub
// cluster: service-account tokens, which are credentials for the hub
// cluster itself.
func CheckSecret(s *corev1.Secret) error {
	if s.Type == corev1.SecretTypeServiceAccountToken {
		return &NotCarriedError{Kind: Secret, Name: s.Name,
			Reason: "it is a service-account token of the hub cluster; create the Secret the workload needs under another name"}
	}
	return nil
}
