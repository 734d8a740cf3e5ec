// SPDX-License-Identifier: Apache-2.0

// Package server is the hub's gRPC front door: TLS 1.3 with client
// certificates verified against the hub CA, one authentication and
// authorization interceptor (Register is public, agent calls need the
// certificate of a registered cluster, everything else a user whose role
// bindings allow the method's row of the authorization table in methods.go),
// the audit log of mutating calls, one table from domain errors to gRPC
// codes, request metrics, and an HTTP server for /healthz, /readyz and
// /metrics.
package server
