// SPDX-License-Identifier: Apache-2.0

package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Subject names of Shoal identities.
const (
	// AdminCommonName is the CN of the admin client certificate.
	AdminCommonName = "shoal:admin"
	// AdminGroup is the O of admin client certificates.
	AdminGroup = "shoal:admins"
	// AgentCommonNamePrefix precedes the cluster name in an agent's CN.
	AgentCommonNamePrefix = "shoal:agent:"
	// AgentGroup is the O of agent client certificates.
	AgentGroup = "shoal:agents"
	// UserCommonNamePrefix precedes the user name in a user's CN.
	UserCommonNamePrefix = "shoal:user:"
	// UserGroup is the O of user client certificates.
	UserGroup = "shoal:users"
)

// Role is what a client certificate allows.
type Role int

// The roles.
const (
	// RoleNone is a certificate that names no Shoal identity.
	RoleNone Role = iota
	// RoleAdmin may call every admin RPC.
	RoleAdmin
	// RoleAgent may call the agent RPCs of its own cluster.
	RoleAgent
	// RoleUser is a hub-issued user: what it may do is its User record's
	// role bindings (hub/users).
	RoleUser
)

// String names the role.
func (r Role) String() string {
	switch r {
	case RoleAdmin:
		return "admin"
	case RoleAgent:
		return "agent"
	case RoleUser:
		return "user"
	default:
		return "none"
	}
}

// Identity is who a verified client certificate belongs to.
type Identity struct {
	// Role is admin or agent.
	Role Role
	// Cluster is the agent's cluster name (empty for admins).
	Cluster string
	// User is the user's name (RoleUser only).
	User string
	// Serial is the certificate's serial number in hex.
	Serial string
}

// ErrUnknownIdentity means a certificate signed by the CA whose subject names
// no Shoal identity.
var ErrUnknownIdentity = errors.New("pki: certificate names no shoal identity")

// IdentityOf maps a certificate (already verified against the CA) to its identity.
func IdentityOf(cert *x509.Certificate) (Identity, error) {
	cn, orgs := cert.Subject.CommonName, cert.Subject.Organization
	id := Identity{Serial: SerialString(cert)}
	switch {
	case cn == AdminCommonName && slices.Contains(orgs, AdminGroup):
		id.Role = RoleAdmin
	case strings.HasPrefix(cn, AgentCommonNamePrefix) && slices.Contains(orgs, AgentGroup):
		id.Role = RoleAgent
		id.Cluster = strings.TrimPrefix(cn, AgentCommonNamePrefix)
		if id.Cluster == "" {
			return Identity{}, fmt.Errorf("%w: agent certificate without a cluster name", ErrUnknownIdentity)
		}
	case strings.HasPrefix(cn, UserCommonNamePrefix) && slices.Contains(orgs, UserGroup):
		id.Role = RoleUser
		id.User = strings.TrimPrefix(cn, UserCommonNamePrefix)
		if id.User == "" {
			return Identity{}, fmt.Errorf("%w: user certificate without a user name", ErrUnknownIdentity)
		}
	default:
		return Identity{}, fmt.Errorf("%w: CN=%q O=%q", ErrUnknownIdentity, cn, orgs)
	}
	return id, nil
}

// AgentCommonName is the CN of the agent certificate of cluster.
func AgentCommonName(cluster string) string { return AgentCommonNamePrefix + cluster }

// UserCommonName is the CN of user name's certificate.
func UserCommonName(name string) string { return UserCommonNamePrefix + name }

// SerialString is the certificate's serial number in lower-case hex.
func SerialString(cert *x509.Certificate) string { return cert.SerialNumber.Text(16) }
