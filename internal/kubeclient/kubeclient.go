// SPDX-License-Identifier: Apache-2.0

// Package kubeclient sizes the Kubernetes client configs of the hub and
// the agent for the bursts of a gang start.
package kubeclient

import "k8s.io/client-go/rest"

// Protobuf is the content type of the built-in types' protobuf encoding.
const Protobuf = "application/vnd.kubernetes.protobuf"

// Sized returns a copy of c with room for gang-sized bursts — qps and
// burst, unless c sets limits of its own (client-go's default of 5 a
// second, which a kubeconfig or the in-cluster config leaves in place,
// would take 13 s to start 64 members) — and protobuf for the built-in
// types unless c chooses an encoding: cheaper than JSON for both ends, and
// for the API server's watches one encoding of each pod change where its
// watchers agree on it (an agent's virtual nodes and the hub's dispatcher
// watch the same member pods). Clients of custom resources (the dynamic
// client) send JSON whatever the config says.
func Sized(c *rest.Config, qps float32, burst int) *rest.Config {
	c = rest.CopyConfig(c)
	if c.QPS == 0 && c.RateLimiter == nil {
		c.QPS, c.Burst = qps, burst
	}
	if c.ContentType == "" {
		c.AcceptContentTypes = Protobuf + ",application/json"
		c.ContentType = Protobuf
	}
	return c
}
