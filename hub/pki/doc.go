// SPDX-License-Identifier: Apache-2.0

// Package pki owns the hub's certificate authority: it creates the CA on
// first start and keeps it in the data directory, issues the hub's serving
// certificate and the admin client certificate, signs agent CSRs, and maps a
// verified client certificate to a Shoal identity (admin or the agent of one
// cluster).
//
// Identities are carried in the certificate subject, like Kubernetes does:
//
//	admin:  CN=shoal:admin            O=shoal:admins
//	agent:  CN=shoal:agent:<cluster>  O=shoal:agents
//
// The CA hash that agents pin is "sha256:" followed by the hex SHA-256 of the
// CA certificate's DER SubjectPublicKeyInfo, as kubeadm prints it.
package pki
