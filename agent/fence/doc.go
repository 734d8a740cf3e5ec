// SPDX-License-Identifier: Apache-2.0

// Package fence stops an agent's gang members when the agent has lost the
// hub. An agent that has had no successful exchange with the hub for the
// fence timeout cannot know whether the hub has given its gangs up, so it
// stops every member itself (reason Fenced) and refuses to create members
// until it reaches the hub again. The hub counts the cluster Lost, and only
// then runs its gangs elsewhere, after the same timeout plus a margin
// (hub/registry), so two copies of a gang never overlap.
//
// An exchange is a heartbeat sent while the hub cluster also answers the
// agent (agent/hubkube.Probe, wired in agent.go): cut from the hub cluster
// alone, the agent does not see its members' deletion, so its heartbeats
// no longer count and it fences as for a full cut, which the hub assumes
// (hub/dispatch fencewait.go). The fence depends on nothing remote: the
// clock runs locally and members are deleted in the workload cluster, so
// it holds whether the cut separates the agent from the hub's API, the hub
// cluster, or both. Until the first
// exchange after a (re)start the agent counts as fenced for creates, so a
// restarted agent inside a cut does not start members again.
package fence
