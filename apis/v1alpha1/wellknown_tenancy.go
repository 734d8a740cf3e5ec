// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Names of the tenancy protocol between hub and agent: the namespace of a
// queue's members in every workload cluster and the Pod Security Standards
// level they are held to (docs/security.md, docs/queues.md).
const (
	// AnnotationPodSecurity on a hub member pod is the effective pod-security
	// level of its job's queue (a PodSecurityLevel), stamped by the
	// dispatcher; the agent evaluates the local pod at this level before it
	// creates it and labels the queue's namespace to enforce it.
	AnnotationPodSecurity = Prefix + "pod-security"
	// AnnotationQueue on a hub member pod is the job's queue (a queue path
	// such as a/b is no valid label value), stamped by the dispatcher; the
	// agent puts the member in LocalMemberNamespace of it and refuses a pod
	// without it. The agent also sets it on the queue namespaces it creates.
	AnnotationQueue = Prefix + "queue"
	// AnnotationHubNamespace on a local pod is the hub-cluster namespace of
	// its hub pod (its cluster's, ClusterNamespace): the local pod lives in
	// its queue's LocalMemberNamespace, which is another.
	AnnotationHubNamespace = Prefix + "hub-namespace"
	// ReasonPodSecurity is the reason a member is refused (the hub pod
	// Failed, with the library's reasons in the message) when the pod the
	// agent would create violates its queue's pod-security level.
	ReasonPodSecurity = "PodSecurityViolation"
	// ReasonNoQueue is the reason a hub pod without a queue label is refused
	// by the agent: it has no namespace in the workload cluster.
	ReasonNoQueue = "NoQueue"
	// ReasonInvalidDevices is the reason a hub pod whose DRA device request
	// (AnnotationDevices) cannot be read is refused by the agent.
	ReasonInvalidDevices = "InvalidDeviceRequest"
)

// The Pod Security Admission namespace labels (k8s.io/pod-security-admission
// api.EnforceLevelLabel and api.EnforceVersionLabel) the agent sets on every
// queue namespace, so that the workload cluster's own admission enforces the
// level too.
const (
	PodSecurityEnforceLabel        = "pod-security.kubernetes.io/enforce"
	PodSecurityEnforceVersionLabel = "pod-security.kubernetes.io/enforce-version"
)

// localNamespacePrefix starts the name of every queue namespace.
const localNamespacePrefix = "shoal-q-"

// localNamespaceHash is how many hex digits of the queue path's SHA-256 end
// a queue namespace's name.
const localNamespaceHash = 8

// maxNamespaceLen is the longest namespace name (a DNS label).
const maxNamespaceLen = 63

// LocalMemberNamespace is the namespace of queue's members in every workload
// cluster: "shoal-q-<segments joined by ->-<8 hex digits of the path's
// SHA-256>", a valid DNS label for any queue path (the segments are cut when
// the name would pass 63 characters). The hash keeps paths that read alike
// apart ("a/b" and the top-level "a-b"), so two queues never share a
// namespace.
func LocalMemberNamespace(queue string) string {
	sum := sha256.Sum256([]byte(queue))
	h := hex.EncodeToString(sum[:])[:localNamespaceHash]
	body := strings.ReplaceAll(queue, "/", "-")
	if max := maxNamespaceLen - len(localNamespacePrefix) - 1 - localNamespaceHash; len(body) > max {
		body = strings.TrimRight(body[:max], "-")
	}
	return localNamespacePrefix + body + "-" + h
}

// LocalNamespaceOf is the workload-cluster namespace of the member whose
// hub pod carries annotations ann: LocalMemberNamespace of its
// AnnotationQueue. It is false when the pod names no queue (it was not
// dispatched by the hub) or an invalid one: such a pod has no namespace.
func LocalNamespaceOf(ann map[string]string) (string, bool) {
	q := ann[AnnotationQueue]
	if q == "" || len(ValidateQueueName(q, nil)) > 0 {
		return "", false
	}
	return LocalMemberNamespace(q), true
}

// HubNamespaceOf is the namespace of the hub pod of a local pod in
// namespace ns with annotations ann: AnnotationHubNamespace, or ns for a
// local pod made before the agent recorded it.
func HubNamespaceOf(ns string, ann map[string]string) string {
	if h := ann[AnnotationHubNamespace]; h != "" {
		return h
	}
	return ns
}

// PodSecurityOf is the pod-security level a hub member pod with
// annotations ann is held to: AnnotationPodSecurity, DefaultPodSecurityLevel
// when it is unset, and PodSecurityRestricted when it is not a level.
func PodSecurityOf(ann map[string]string) PodSecurityLevel {
	l := PodSecurityLevel(ann[AnnotationPodSecurity])
	switch {
	case l == "":
		return DefaultPodSecurityLevel
	case !l.Valid():
		return PodSecurityRestricted
	}
	return l
}

// AgentMemberClusterRole is the workload-cluster ClusterRole of the agent's
// rights on members and their objects (deploy/agent/rbac.yaml); the agent
// binds itself to it, with a RoleBinding of the same name, in each queue
// namespace it creates, and holds those rights nowhere else.
const AgentMemberClusterRole = "shoal-agent-member"
