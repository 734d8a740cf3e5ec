// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The one GitOps schema. The hub stores a cluster's source in its
// spec.gitops and the agent's report in its status.gitops; the same types
// travel between hub and agent (ReportGitOpsStatus carries the JSON of a
// GitOpsStatus and answers with the JSON of a GitOpsSource) and between the
// CLI and the hub (GitOps.SetSource).

// DefaultGitOpsInterval is the sync interval used when a source leaves it unset.
const DefaultGitOpsInterval = 5 * time.Minute

// DefaultGitOpsHealthTimeout bounds how long a sync waits for applied
// objects to become healthy when a source leaves HealthTimeout unset.
const DefaultGitOpsHealthTimeout = 2 * time.Minute

// GitOpsSource names a cluster's configuration in Git. It carries the name
// of a Secret in the workload cluster, never credentials.
type GitOpsSource struct {
	// URL of the repository (https, http or ssh; no user info).
	URL string `json:"url"`
	// Ref is a branch, tag or commit; default branch main.
	Ref GitOpsRef `json:"ref,omitempty"`
	// Path of the kustomization (or plain YAML directory) in the repository,
	// e.g. "clusters/eu1"; empty means the root.
	Path string `json:"path,omitempty"`
	// Interval between syncs; drift is corrected at this rate.
	Interval *metav1.Duration `json:"interval,omitempty"`
	// SecretRef names a Secret in the agent's namespace of the workload
	// cluster with `username` and `password` (HTTPS basic auth or token),
	// `bearerToken`, or `identity` and `known_hosts` (SSH) keys. Empty means
	// anonymous.
	SecretRef string `json:"secretRef,omitempty"`
	// Prune deletes objects Shoal applied earlier that left the source.
	Prune bool `json:"prune,omitempty"`
	// HealthTimeout bounds the wait for applied objects to become ready.
	HealthTimeout *metav1.Duration `json:"healthTimeout,omitempty"`
}

// GitOpsRef selects what to check out: a branch, a tag or a commit (a
// commit may go with a branch, to fetch only that branch). An empty ref
// means the branch "main".
type GitOpsRef struct {
	// Branch to follow.
	Branch string `json:"branch,omitempty"`
	// Tag to check out.
	Tag string `json:"tag,omitempty"`
	// Commit (full SHA) to pin; what a hub rollout sets.
	Commit string `json:"commit,omitempty"`
}

// String names the ref for messages: "branch main", "tag v1", "commit abc".
func (r GitOpsRef) String() string {
	switch {
	case r.Commit != "":
		return "commit " + r.Commit
	case r.Tag != "":
		return "tag " + r.Tag
	case r.Branch != "":
		return "branch " + r.Branch
	}
	return "branch main"
}

// IntervalDuration is the sync interval, DefaultGitOpsInterval when unset.
func (s GitOpsSource) IntervalDuration() time.Duration {
	if s.Interval == nil || s.Interval.Duration == 0 {
		return DefaultGitOpsInterval
	}
	return s.Interval.Duration
}

// HealthTimeoutDuration is the health wait, DefaultGitOpsHealthTimeout when unset.
func (s GitOpsSource) HealthTimeoutDuration() time.Duration {
	if s.HealthTimeout == nil || s.HealthTimeout.Duration == 0 {
		return DefaultGitOpsHealthTimeout
	}
	return s.HealthTimeout.Duration
}

// GitOpsHealth is the kstatus-derived health of the applied objects.
type GitOpsHealth string

// The GitOps health values.
const (
	// GitOpsHealthUnknown means no revision has been applied yet.
	GitOpsHealthUnknown GitOpsHealth = "Unknown"
	// GitOpsHealthHealthy means every applied object reached its desired state.
	GitOpsHealthHealthy GitOpsHealth = "Healthy"
	// GitOpsHealthProgressing means objects were applied and are still rolling out.
	GitOpsHealthProgressing GitOpsHealth = "Progressing"
	// GitOpsHealthDegraded means objects failed or did not become ready in time.
	GitOpsHealthDegraded GitOpsHealth = "Degraded"
)

// GitOps condition types of GitOpsStatus, in the Ready/Reconciling/Stalled style.
const (
	// GitOpsConditionReady is True when the last sync applied its revision
	// and the objects are healthy.
	GitOpsConditionReady = "Ready"
	// GitOpsConditionReconciling is True while a sync is in progress.
	GitOpsConditionReconciling = "Reconciling"
	// GitOpsConditionStalled is True when the sync cannot progress without a
	// change to the source or the repository (bad ref, bad kustomization,
	// rejected manifest).
	GitOpsConditionStalled = "Stalled"
)

// Reasons of the GitOps conditions.
const (
	GitOpsReasonSucceeded         = "ReconciliationSucceeded"
	GitOpsReasonProgressing       = "Progressing"
	GitOpsReasonInvalidSource     = "InvalidSource"
	GitOpsReasonCredentialsFailed = "CredentialsFailed"
	GitOpsReasonFetchFailed       = "FetchFailed"
	GitOpsReasonBuildFailed       = "BuildFailed"
	GitOpsReasonValidationFailed  = "ValidationFailed"
	GitOpsReasonApplyFailed       = "ApplyFailed"
	GitOpsReasonPruneFailed       = "PruneFailed"
	GitOpsReasonHealthCheckFailed = "HealthCheckFailed"
)

// GitOpsStatus is a cluster's GitOps sync as its agent reports it, plus the
// commit a rollout pinned on it (ReportedTime, PinnedCommit and PinnedBy are
// the hub's; the hub ignores them in a report).
type GitOpsStatus struct {
	// Revision applied in full (e.g. main@sha1:…).
	Revision string `json:"revision,omitempty"`
	// AppliedCommit is the bare SHA of Revision.
	AppliedCommit string `json:"appliedCommit,omitempty"`
	// AttemptedRevision and AttemptedCommit name the last attempt's
	// revision, which differs from the applied one when it failed.
	AttemptedRevision string `json:"attemptedRevision,omitempty"`
	AttemptedCommit   string `json:"attemptedCommit,omitempty"`
	// Health of the applied objects: Healthy, Progressing, Degraded or Unknown.
	Health GitOpsHealth `json:"health,omitempty"`
	// HealthMessage explains a health other than Healthy.
	HealthMessage string `json:"healthMessage,omitempty"`
	// LastAppliedTime is when a sync last succeeded.
	LastAppliedTime *metav1.Time `json:"lastAppliedTime,omitempty"`
	// LastAttemptTime is when the last sync finished.
	LastAttemptTime *metav1.Time `json:"lastAttemptTime,omitempty"`
	// Message is the last attempt's error; empty when it succeeded.
	Message string `json:"message,omitempty"`
	// Drifted lists objects the last sync found changed or deleted in the
	// cluster at an unchanged revision, and corrected (Kind/namespace/name).
	Drifted []string `json:"drifted,omitempty"`
	// InventorySize is the number of objects applied from Git.
	InventorySize int32 `json:"inventorySize,omitempty"`
	// Conditions are the agent's Ready, Reconciling and Stalled.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ReportedTime is when the hub received the agent's last report.
	ReportedTime *metav1.Time `json:"reportedTime,omitempty"`
	// PinnedCommit, when set, is the commit the hub tells the agent to sync
	// instead of the source's ref (set by a rollout).
	PinnedCommit string `json:"pinnedCommit,omitempty"`
	// PinnedBy is the rollout that pinned PinnedCommit.
	PinnedBy string `json:"pinnedBy,omitempty"`
}

// Ready reports whether the Ready condition is True.
func (s *GitOpsStatus) Ready() bool {
	return s != nil && meta.IsStatusConditionTrue(s.Conditions, GitOpsConditionReady)
}

// GitOpsObjectName renders an applied object as Kind/namespace/name
// (namespace omitted when empty), the form of GitOpsStatus.Drifted.
func GitOpsObjectName(kind, namespace, name string) string {
	if namespace == "" {
		return fmt.Sprintf("%s/%s", kind, name)
	}
	return fmt.Sprintf("%s/%s/%s", kind, namespace, name)
}
