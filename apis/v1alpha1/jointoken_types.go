// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// JoinToken lets a workload cluster's agent register with the hub. Its name
// is the token's public ID; only a hash of the secret part is stored.
// +kubebuilder:object:root=true
type JoinToken struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   JoinTokenSpec   `json:"spec"`
	Status JoinTokenStatus `json:"status,omitempty"`
}

// JoinTokenSpec is how long and how often a token may be used.
type JoinTokenSpec struct {
	// SecretHash is the SHA-256 of the token's secret, hex encoded.
	SecretHash string `json:"secretHash"`
	// Expires is when the token stops working.
	Expires metav1.Time `json:"expires"`
	// MaxUses is how many clusters may register with the token; 0 is unlimited.
	MaxUses int32 `json:"maxUses,omitempty"`
	// Description says what the token is for.
	Description string `json:"description,omitempty"`
}

// JoinTokenStatus is how the token was used.
type JoinTokenStatus struct {
	// Uses counts successful registrations.
	Uses int32 `json:"uses,omitempty"`
	// Clusters lists the clusters registered with the token.
	Clusters []string `json:"clusters,omitempty"`
	// Revoked tokens are refused.
	Revoked bool `json:"revoked,omitempty"`
}
