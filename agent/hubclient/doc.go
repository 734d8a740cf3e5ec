// SPDX-License-Identifier: Apache-2.0

// Package hubclient is the agent's side of the hub API: registration with a
// join token and a pinned CA hash, credentials kept in a Secret of the
// agent's own cluster, mutually authenticated calls, heartbeats and inventory
// reports retried with exponential backoff and jitter.
package hubclient
