// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// User is a person or robot known to the hub (`shoal user create`), with
// the roles it holds on queue subtrees. It authenticates with a client
// certificate the hub CA issued (for a key the hub made, or for the user's
// own CSR), with an OIDC ID token whose username is Spec.OIDCUsername, or
// both. A record with Spec.OIDCGroup is a group binding instead: every
// OIDC token carrying that group gets its roles. The hub reads the record
// at every call, so a change of bindings or a revocation applies to the
// next call.
// +kubebuilder:object:root=true
type User struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   UserSpec   `json:"spec,omitempty"`
	Status UserStatus `json:"status,omitempty"`
}

// UserRole is what a binding allows (docs/security.md has the table).
type UserRole string

// The user roles.
const (
	// UserRoleAdmin may call every method (the queue is not used).
	UserRoleAdmin UserRole = "admin"
	// UserRoleQueueAdmin manages the queues and quotas at or below its
	// queue, and submits, reads and cancels every job there.
	UserRoleQueueAdmin UserRole = "queue-admin"
	// UserRoleSubmitter submits into the queues at or below its queue and
	// reads and cancels its own jobs there.
	UserRoleSubmitter UserRole = "submitter"
	// UserRoleViewer reads the jobs and queues at or below its queue.
	UserRoleViewer UserRole = "viewer"
)

// UserRoles lists every role.
var UserRoles = []UserRole{UserRoleAdmin, UserRoleQueueAdmin, UserRoleSubmitter, UserRoleViewer}

// BootstrapAdminName is the user name of the hub's bootstrap admin
// identity (the certificate shoal-hub writes to --admin-config); no user
// record may take it.
const BootstrapAdminName = "admin"

// UserSpec is what the user may do.
type UserSpec struct {
	// Bindings are the roles the user holds; at least one.
	Bindings []RoleBinding `json:"bindings"`
	// OIDCUsername binds the OIDC identity of this username (the hub's
	// --oidc-username-claim of a verified ID token, with its
	// --oidc-username-prefix) to this user: such a token acts as the user.
	// At most one user binds a username.
	OIDCUsername string `json:"oidcUsername,omitempty"`
	// OIDCGroup makes the record a group binding: a verified ID token whose
	// --oidc-groups-claim holds this group gets these bindings (on top of
	// those of its user, if any). A group record holds no certificate and
	// no OIDCUsername; at most one record binds a group.
	OIDCGroup string `json:"oidcGroup,omitempty"`
}

// RoleBinding grants a role on a queue subtree.
type RoleBinding struct {
	// Role is admin, queue-admin, submitter or viewer.
	Role UserRole `json:"role"`
	// Queue is the root of the subtree the role applies to (the queue and
	// every queue below it); required for every role but admin, which
	// must leave it empty.
	Queue string `json:"queue,omitempty"`
}

// UserStatus is set by the hub only (hub/users).
type UserStatus struct {
	// Serial is the serial number (hex) of the user's current certificate.
	Serial string `json:"serial,omitempty"`
	// NotAfter is when that certificate expires.
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// KeyFromCSR is true when the current certificate was signed for a
	// CSR the user made (the hub never saw its private key).
	KeyFromCSR bool `json:"keyFromCSR,omitempty"`
	// RenewedTime is when the holder last renewed its certificate
	// (`shoal user renew`); the serial before it is in RevokedSerials.
	RenewedTime *metav1.Time `json:"renewedTime,omitempty"`
	// Revoked is true once the user was revoked: every certificate of the
	// user is refused.
	Revoked bool `json:"revoked,omitempty"`
	// RevokedTime is when the user was revoked.
	RevokedTime *metav1.Time `json:"revokedTime,omitempty"`
	// RevokedSerials are revoked certificate serials: the serials a user
	// renewed away from, and for the bootstrap admin record its revoked
	// certificates.
	RevokedSerials []string `json:"revokedSerials,omitempty"`
}

// InSubtree reports whether queue is root or below it.
func InSubtree(queue, root string) bool {
	return queue == root || (len(queue) > len(root) && queue[:len(root)] == root && queue[len(root)] == '/')
}
