package gitopstypes

import (
	"fmt"
	"time"
)

// Health is the kstatus-derived health of the applied objects.
type Health string

// Health values.
const (
	// HealthUnknown means no revision has been applied yet.
	HealthUnknown Health = "Unknown"
	// HealthHealthy means every applied object reached its desired state.
	HealthHealthy Health = "Healthy"
	// HealthProgressing means objects were applied and are still rolling out.
	HealthProgressing Health = "Progressing"
	// HealthDegraded means objects failed or did not become ready in time.
	HealthDegraded Health = "Degraded"
)

// Condition types, in the Ready/Reconciling/Stalled style.
const (
	// ConditionReady is True when the last sync applied its revision and the
	// objects are healthy.
	ConditionReady = "Ready"
	// ConditionReconciling is True while a sync is in progress.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the sync cannot progress without a change
	// to the source or the repository (bad ref, bad kustomization, rejected
	// manifest).
	ConditionStalled = "Stalled"
)

// Condition reasons.
const (
	ReasonSucceeded         = "ReconciliationSucceeded"
	ReasonProgressing       = "Progressing"
	ReasonInvalidSource     = "InvalidSource"
	ReasonCredentialsFailed = "CredentialsFailed"
	ReasonFetchFailed       = "FetchFailed"
	ReasonBuildFailed       = "BuildFailed"
	ReasonValidationFailed  = "ValidationFailed"
	ReasonApplyFailed       = "ApplyFailed"
	ReasonPruneFailed       = "PruneFailed"
	ReasonHealthCheckFailed = "HealthCheckFailed"
)

// Condition is one observed aspect of the sync.
type Condition struct {
	Type    string `json:"type"`
	Status  bool   `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// LastTransitionTime is when Status last changed.
	LastTransitionTime time.Time `json:"lastTransitionTime"`
}

// ObjectRef names one Kubernetes object applied from Git.
type ObjectRef struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String renders the ref as Kind/namespace/name (namespace omitted when empty).
func (o ObjectRef) String() string {
	if o.Namespace == "" {
		return fmt.Sprintf("%s/%s", o.Kind, o.Name)
	}
	return fmt.Sprintf("%s/%s/%s", o.Kind, o.Namespace, o.Name)
}

// Status is what the agent reports about its cluster's GitOps sync.
type Status struct {
	// AppliedRevision is the last revision applied in full, e.g.
	// "main@sha1:4f1c…"; AppliedCommit is its bare SHA.
	AppliedRevision string `json:"appliedRevision,omitempty"`
	AppliedCommit   string `json:"appliedCommit,omitempty"`
	// AttemptedRevision and AttemptedCommit name the revision of the last
	// attempt, which differs from the applied one when it failed.
	AttemptedRevision string `json:"attemptedRevision,omitempty"`
	AttemptedCommit   string `json:"attemptedCommit,omitempty"`
	// LastAttemptTime is when the last sync finished; LastAppliedTime when a
	// sync last succeeded.
	LastAttemptTime time.Time `json:"lastAttemptTime,omitempty"`
	LastAppliedTime time.Time `json:"lastAppliedTime,omitempty"`
	// LastError is the last sync's error; empty when it succeeded.
	LastError string `json:"lastError,omitempty"`
	// Drifted lists objects the last sync found changed or deleted in the
	// cluster at an unchanged revision, and corrected.
	Drifted []ObjectRef `json:"drifted,omitempty"`
	// Health of the applied objects, with a message when not Healthy.
	Health        Health `json:"health"`
	HealthMessage string `json:"healthMessage,omitempty"`
	// InventorySize is the number of objects Shoal manages from Git.
	InventorySize int `json:"inventorySize"`
	// Conditions are Ready, Reconciling and Stalled.
	Conditions []Condition `json:"conditions,omitempty"`
}

// Condition returns the condition of the given type, if present.
func (s Status) Condition(t string) (Condition, bool) {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return Condition{}, false
}

// SetCondition adds or replaces a condition, keeping its transition time when
// Status did not change.
func (s *Status) SetCondition(c Condition) {
	for i, old := range s.Conditions {
		if old.Type == c.Type {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			s.Conditions[i] = c
			return
		}
	}
	s.Conditions = append(s.Conditions, c)
}

// Ready reports whether the Ready condition is True.
func (s Status) Ready() bool {
	c, ok := s.Condition(ConditionReady)
	return ok && c.Status
}
