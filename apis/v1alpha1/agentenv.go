// SPDX-License-Identifier: Apache-2.0

package v1alpha1

// EnvJoinToken is the environment variable shoal-agent reads its join
// token from (the alternative to --token-file); the hub's printed agent
// command sets it, so the token is not on the agent's command line.
const EnvJoinToken = "SHOAL_JOIN_TOKEN"
