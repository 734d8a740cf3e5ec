// SPDX-License-Identifier: Apache-2.0

// Package users owns the User records (store kind "users"): it creates a
// user with its hub-issued client certificate, lists and revokes users,
// authenticates a user certificate against its record at every call, and
// holds the rules that say what each role may do on a queue subtree
// (Allowed). hub/server applies the rules to every gRPC method in one
// interceptor (docs/security.md).
package users
