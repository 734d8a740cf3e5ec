// SPDX-License-Identifier: Apache-2.0

// Package v1alpha1 declares the shoal CLI's client configuration file
// (~/.shoal/config, kind Config of apiVersion shoal.dev/v1alpha1): named
// contexts, each a hub address and the identity to present, like a
// kubeconfig. It holds the types, their defaults, loading and saving the
// file, and the TLS configuration a context dials the hub with.
//
// shoal-hub writes this file for its admin identity (--admin-config); the
// CLI, `shoal dev` and the tests read it. The package imports nothing of
// Shoal outside apis, so the CLI needs no hub package to use it.
package v1alpha1
