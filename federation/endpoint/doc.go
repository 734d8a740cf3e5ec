// SPDX-License-Identifier: Apache-2.0

// Package endpoint guards the operational HTTP endpoints of shoal-hub and
// shoal-agent (/metrics, /healthz, /readyz): on a loopback address they
// may be plain HTTP; on any other address they are served only over TLS
// that requires and verifies client certificates. Kubernetes probes come
// from the kubelet, not from localhost, so the binaries can also serve
// /healthz and /readyz alone (nothing else) on a separate plain address.
package endpoint
