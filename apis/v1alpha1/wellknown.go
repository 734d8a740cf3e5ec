// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"
	"time"
)

// Prefix is the prefix of every label, annotation, gate, taint and pod
// condition Shoal declares. Every name with this prefix is declared in this
// file and nowhere else (a test in this package fails otherwise), so the hub
// and the agent cannot disagree on the protocol between them.
const Prefix = Group + "/"

// Labels Shoal puts on objects it creates.
const (
	// LabelCluster names the workload cluster of a virtual node, member pod or
	// hub-cluster RBAC object.
	LabelCluster = Prefix + "cluster"
	// LabelJob names the Job a member pod (and its headless Service) belongs to.
	LabelJob = Prefix + "job"
	// LabelMember is the index of a member pod within its gang.
	LabelMember = Prefix + "member"
	// LabelRole is the role of a member pod of a job with spec.roles.
	LabelRole = Prefix + "role"
	// LabelEpoch is the placement epoch a hub member pod belongs to.
	LabelEpoch = Prefix + "epoch"
	// LabelQueue is the queue of a Job's member pods.
	LabelQueue = Prefix + "queue"
	// LabelManaged marks the namespaces and pods an agent manages in its
	// workload cluster.
	LabelManaged = Prefix + "managed"
	// LabelVirtual marks virtual nodes ("true").
	LabelVirtual = Prefix + "virtual"
	// LabelPool names the GPU pool of a virtual node.
	LabelPool = Prefix + "pool"
)

// VirtualNodeSelector selects every virtual node in the hub cluster.
const VirtualNodeSelector = LabelVirtual + "=true"

// Annotations on hub member pods, the hub → agent dispatch protocol
// (docs/scheduling.md).
const (
	// AnnotationEpoch carries the placement epoch for agents, which refuse
	// stale ones.
	AnnotationEpoch = Prefix + "epoch"
	// AnnotationGangSize is the gang's member count.
	AnnotationGangSize = Prefix + "gang-size"
	// AnnotationTargetNode names the workload-cluster node the member targets;
	// the agent pins the local pod to it. Placement is node-exact, so the node
	// implies every topology domain the gang was placed in.
	AnnotationTargetNode = Prefix + "target-node"
	// AnnotationTargetLevel is the topology level of the gang's tightest
	// domain. It is informational (for people reading the pod); agents do not
	// act on it, the target node carries the placement.
	AnnotationTargetLevel = Prefix + "target-level"
	// AnnotationCommit, set to the epoch by the dispatcher, tells the agent to
	// lift the scheduling gate of the member.
	AnnotationCommit = Prefix + "commit"
	// AnnotationTraceParent is the W3C traceparent of a job attempt's root
	// span (docs/tracing.md): on a Job, written by the hub when the attempt
	// starts (a client's value is replaced); on its member pods, copied by
	// the dispatcher, so that the agents' member spans join the attempt's
	// trace.
	AnnotationTraceParent = Prefix + "traceparent"
	// AnnotationDevices is the member's DRA device request (JSON of
	// MemberDevices) on a hub pod of a gang with spec.gang.devices: the
	// agent makes the local pod's ResourceClaim from it.
	AnnotationDevices = Prefix + "devices"
	// AnnotationSliceSize is the number of the gang's members (this epoch)
	// placed in the member's cluster: the minimum count of the PodGroup by
	// which a cluster serving the native gang API admits its slice all or
	// nothing (docs/native-gang.md).
	AnnotationSliceSize = Prefix + "slice-size"
	// AnnotationComputeDomain is, on a hub pod of a gang with
	// spec.gang.computeDomain, the JSON of MemberComputeDomain: the nodes
	// of the member's cluster the epoch's members target, from which the
	// agent counts the nodes of the member's NVLink clique (the
	// ComputeDomain's numNodes; docs/compute-domains.md).
	AnnotationComputeDomain = Prefix + "compute-domain"
)

// Annotations the agent writes on local pods of its workload cluster.
const (
	// AnnotationHubUID is the UID of a local pod's hub pod.
	AnnotationHubUID = Prefix + "hub-uid"
	// AnnotationVirtualNode is the virtual node the hub pod is bound to.
	AnnotationVirtualNode = Prefix + "virtual-node"
)

// Annotations on stored Shoal objects.
const (
	// AnnotationSpecHash on a Job is the hash of its submitted spec; a second
	// submit with the same name and hash is a no-op.
	AnnotationSpecHash = Prefix + "spec-hash"
	// AnnotationNotBefore on a Job is the RFC 3339 time before which the
	// scheduler does not place it again (requeue backoff).
	AnnotationNotBefore = Prefix + "not-before"
	// AnnotationAborts on a Job counts the aborted dispatches of its current
	// run (the backoff grows with it).
	AnnotationAborts = Prefix + "aborts"
	// AnnotationPreemptedBy on a Job names the job that preempted it.
	AnnotationPreemptedBy = Prefix + "preempted-by"
	// AnnotationTraceStart on a Job is the RFC 3339 time its current attempt
	// started (submit or requeue), the start of the attempt's root span; it
	// goes with AnnotationTraceParent.
	AnnotationTraceStart = Prefix + "trace-start"
	// AnnotationImplicit on a Queue marks a parent queue the hub created
	// because a child named it ("true").
	AnnotationImplicit = Prefix + "implicit"
	// AnnotationCertificateSerial on a Cluster is the serial number of the
	// agent's current client certificate.
	AnnotationCertificateSerial = Prefix + "agent-certificate-serial"
	// AnnotationCertificateNextSerial on a Cluster is the serial number of
	// the certificate the agent renewed to and has not used yet: the first
	// call made with it makes it the current one (AnnotationCertificateSerial),
	// and the old one is refused from then on.
	AnnotationCertificateNextSerial = Prefix + "agent-certificate-next-serial"
	// AnnotationPrune on a GitOps-applied object set to "disabled" keeps the
	// agent from pruning it when it leaves the source.
	AnnotationPrune = Prefix + "prune"
)

// SchedulingGate holds a prepared gang member's local pod until the commit.
const SchedulingGate = Prefix + "gang"

// TaintVirtual is the NoSchedule taint of virtual nodes; member pods
// tolerate it.
const TaintVirtual = Prefix + "virtual"

// PodConditionPrepared is the pod condition the agent reports on a hub member
// pod: True when the member fits (its local pod behind its gate, or held
// until the commit), False with a reason when it cannot. A held member is
// reported first by its epoch's report (PodConditionPreparedMembers) and
// shows this condition with its next status.
const PodConditionPrepared = Prefix + "Prepared"

// PodConditionNodeReclaimed is the pod condition the agent sets, True, on
// a member whose node is marked to go (a spot or preemptible node that
// carries a taint or label named by the agent's --spot-node-taint or
// --spot-node-label); the member still runs. The hub then moves the whole
// gang with its preemption grace (SIGTERM, then the grace for a
// checkpoint), without counting a restart: reason ReasonNodeReclaimed.
const PodConditionNodeReclaimed = Prefix + "NodeReclaimed"

// Job condition types written by the hub besides the phase conditions of
// job_status.go.
const (
	// JobConditionDispatched records the two-phase dispatch decision:
	// Unknown/Preparing, True/Committed, False/Aborting|Restarting|Failing.
	JobConditionDispatched = "Dispatched"
	// JobConditionPreempted is True while the job is preempted by another.
	JobConditionPreempted = "Preempted"
)

// Reasons of the Dispatched job condition.
const (
	// ReasonPreparing: members are being prepared in their clusters.
	ReasonPreparing = "Preparing"
	// ReasonCommitted: every member was prepared and committed.
	ReasonCommitted = "Committed"
	// ReasonAborting: the dispatch is aborted; members are torn down and the
	// job requeued.
	ReasonAborting = "Aborting"
	// ReasonRestarting: a member failed; the gang is torn down and restarted.
	ReasonRestarting = "Restarting"
	// ReasonFailing: the gang failed beyond its failure policy and is torn down.
	ReasonFailing = "Failing"
	// ReasonStartTimeout is the cause of an abort after the commit
	// (status.dispatch.reason, then the requeued job's Placed reason): not
	// every member ran by the start deadline; the message names the members
	// and clusters that did not start. It is not a restart: the job is
	// requeued with the abort backoff and maxRestarts is untouched.
	ReasonStartTimeout = "StartTimeout"
	// ReasonDrained is the cause of an abort (status.dispatch.reason, then
	// the requeued job's Placed reason) when a member's cluster or node is
	// drained: the gang is stopped with its preemption grace and requeued at
	// once; it is not a restart (maxRestarts is untouched) and has no
	// backoff. It is also the Ready reason of a drained cluster with no gang
	// left (state Cordoned) and of the Drained condition when True.
	ReasonDrained = "Drained"
	// ReasonDraining is the Drained cluster condition's reason while gangs
	// are still on the drained cluster or nodes.
	ReasonDraining = "Draining"
	// ReasonClusterLost is the cause of an abort (status.dispatch.reason,
	// then the job's Queued or Failed condition) when a member's cluster is
	// Lost: silent for longer than the fence timeout plus the margin, so its
	// agent has fenced itself (onClusterLoss decides: Reschedule or Fail).
	ReasonClusterLost = "ClusterLost"
	// ReasonNodeReclaimed is the cause of an abort (status.dispatch.reason,
	// then the requeued job's Placed reason) when a member's node is marked
	// to go (PodConditionNodeReclaimed): like a drain, the gang is stopped
	// with its preemption grace and requeued at once, not counted as a
	// restart. It is also the reason of that pod condition.
	ReasonNodeReclaimed = "NodeReclaimed"
)

// HubClusterContactWindow is how recent the agent's last successful
// request to the hub cluster must be, when a heartbeat leaves, for the
// heartbeat to say the hub cluster is reachable (agent/hubkube.Probe). The
// hub takes a heartbeat as proof that the agent has seen a member's
// deletion only when it came at least this long after the deletion.
const HubClusterContactWindow = 5 * time.Second

// Cluster condition types and reasons.
const (
	// ClusterConditionReady is the Cluster's liveness: the agent's session
	// and node leases are current.
	ClusterConditionReady = "Ready"
	// ClusterConditionReachable says whether the agent can reach its own
	// cluster's API server.
	ClusterConditionReachable = "ClusterReachable"
	// ClusterConditionHubClusterReachable says whether the agent's link to
	// the hub cluster works (HeartbeatRequest.hub_cluster_reachable): False
	// with ReasonHubClusterUnreachable while its heartbeats say it does not,
	// and with ReasonHubClusterFenced once no heartbeat said it does for
	// longer than the fence timeout plus the margin (the agent has fenced
	// itself). It does not change the cluster's liveness (Ready).
	ClusterConditionHubClusterReachable = "HubClusterReachable"
	// ReasonHubClusterReachable: the latest heartbeat said the agent reaches
	// the hub cluster.
	ReasonHubClusterReachable = "HubClusterReachable"
	// ReasonHubClusterUnreachable: the latest heartbeat said the agent cannot
	// reach the hub cluster (it does not see the deletion of its members).
	ReasonHubClusterUnreachable = "HubClusterUnreachable"
	// ReasonHubClusterFenced: no heartbeat said the agent reaches the hub
	// cluster for longer than the fence timeout plus the margin.
	ReasonHubClusterFenced = "HubClusterFenceExpired"
	// ClusterConditionDrained is set while the cluster or some of its nodes
	// are drained (spec.drain, spec.drainedNodes): True once no gang has a
	// member there, False (ReasonDraining) with the gangs left.
	ClusterConditionDrained = "Drained"
	// ReasonWorkloadClusterUnreachable is the virtual nodes' Ready reason
	// while the agent cannot reach its workload cluster.
	ReasonWorkloadClusterUnreachable = "WorkloadClusterUnreachable"
)

// Reasons on hub member pods' status written by the agent.
const (
	// ReasonLocalPodDeleted: the local pod was deleted by someone other than
	// the agent.
	ReasonLocalPodDeleted = "LocalPodDeleted"
	// ReasonDeletedOnHub: the terminated reason of containers of a pod
	// deleted on the hub.
	ReasonDeletedOnHub = "DeletedOnHub"
	// ReasonNodeNotReady: the member's node in the workload cluster was not
	// Ready (or was deleted) for longer than the agent's grace; the agent
	// stopped the member.
	ReasonNodeNotReady = "NodeNotReady"
	// ReasonGPUUnhealthy: the member's node lost GPUs it was bound to (the
	// device plugin removed unhealthy GPUs from allocatable) or carries a
	// taint or condition the agent is configured to read as a GPU failure;
	// the agent stopped the member.
	ReasonGPUUnhealthy = "GPUUnhealthy"
	// ReasonStaleEpoch: the member belongs to an epoch older than the newest
	// the agent knows for its job; the agent removed it (also the Prepared
	// condition's reason when a stale member is refused).
	ReasonStaleEpoch = "StaleEpoch"
	// ReasonFenced: the agent has not reached the hub for its fence timeout
	// and stopped the member itself, so that the hub may run the gang
	// elsewhere once it counts the cluster Lost (agent/fence).
	ReasonFenced = "Fenced"
	// ReasonComputeDomainNotReady: the ComputeDomain of the member's NVLink
	// clique was not Ready within the agent's bound after the commit (its
	// IMEX daemons did not start); the agent stopped the member, so the hub
	// aborts the epoch (docs/compute-domains.md).
	ReasonComputeDomainNotReady = "ComputeDomainNotReady"
	// ReasonNoComputeDomain: the Prepared condition's reason for a member of
	// a compute-domain gang that cannot get one: its cluster does not serve
	// ComputeDomains, or its target node has no NVLink clique.
	ReasonNoComputeDomain = "NoComputeDomain"
	// ReasonLocalCreateRefused: the workload cluster refused the local pod
	// of a member held since its prepare when the agent created it at the
	// commit (a ResourceQuota the gang exceeds, an admission webhook); the
	// member is reported failed and not created again.
	ReasonLocalCreateRefused = "LocalCreateRefused"
)

// virtualNodePrefix is the name prefix of every virtual node.
const virtualNodePrefix = "shoal-"

// VirtualNodePrefix is the name prefix of a cluster's virtual nodes.
func VirtualNodePrefix(cluster string) string { return virtualNodePrefix + cluster + "-" }

// VirtualNodeName is the virtual node of a cluster's GPU pool
// (shoal-<cluster>-<pool>).
func VirtualNodeName(cluster, pool string) string { return VirtualNodePrefix(cluster) + pool }

// MemberPodName is the hub pod name of a member of an epoch. The epoch keeps
// a restarted gang's pods apart from the old ones still terminating.
func MemberPodName(job string, epoch int64, index int32) string {
	return fmt.Sprintf("%s-e%d-%d", job, epoch, index)
}

// MemberHostname is a member's stable host name under its job's headless
// Service.
func MemberHostname(job string, index int32) string { return fmt.Sprintf("%s-%d", job, index) }

// ServiceName is the name of a job's headless rendezvous Service.
func ServiceName(job string) string { return job }
