// SPDX-License-Identifier: Apache-2.0

// Package hubkube gives the agent its client of the hub management cluster
// from the kubeconfig issued at registration, and keeps that kubeconfig's
// bounded service-account token fresh: at two thirds of its lifetime it asks
// the hub cluster for a new token of its own ServiceAccount (the only token
// its RBAC allows it to create) and swaps it in without restarting clients.
package hubkube
