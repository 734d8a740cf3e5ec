package rollout

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	gt "github.com/shoal-dev/shoal/federation/gitopstypes"
)

// SourceToAPI converts a source for the cluster record.
func SourceToAPI(s gt.Source) *v1alpha1.GitOpsSource {
	return &v1alpha1.GitOpsSource{
		URL:           s.URL,
		Ref:           v1alpha1.GitOpsRef{Branch: s.Ref.Branch, Tag: s.Ref.Tag, Commit: s.Ref.Commit},
		Path:          s.Path,
		Interval:      duration(s.Interval),
		SecretRef:     s.SecretRef,
		Prune:         s.Prune,
		HealthTimeout: duration(s.HealthTimeout),
	}
}

// SourceFromAPI converts a cluster record's source.
func SourceFromAPI(s *v1alpha1.GitOpsSource) gt.Source {
	out := gt.Source{
		URL:       s.URL,
		Ref:       gt.Ref{Branch: s.Ref.Branch, Tag: s.Ref.Tag, Commit: s.Ref.Commit},
		Path:      s.Path,
		SecretRef: s.SecretRef,
		Prune:     s.Prune,
	}
	if s.Interval != nil {
		out.Interval = s.Interval.Duration
	}
	if s.HealthTimeout != nil {
		out.HealthTimeout = s.HealthTimeout.Duration
	}
	return out
}

// StatusToAPI converts an agent's report for the cluster record, keeping the
// pin of prev.
func StatusToAPI(s gt.Status, prev *v1alpha1.GitOpsStatus, received time.Time) *v1alpha1.GitOpsStatus {
	out := &v1alpha1.GitOpsStatus{
		Revision:          s.AppliedRevision,
		AppliedCommit:     s.AppliedCommit,
		AttemptedRevision: s.AttemptedRevision,
		AttemptedCommit:   s.AttemptedCommit,
		Health:            string(s.Health),
		HealthMessage:     s.HealthMessage,
		LastAppliedTime:   mtime(s.LastAppliedTime),
		LastAttemptTime:   mtime(s.LastAttemptTime),
		Message:           s.LastError,
		InventorySize:     int32(s.InventorySize),
		ReportedTime:      mtime(received),
	}
	for _, d := range s.Drifted {
		out.Drifted = append(out.Drifted, d.String())
	}
	for _, c := range s.Conditions {
		st := metav1.ConditionFalse
		if c.Status {
			st = metav1.ConditionTrue
		}
		out.Conditions = append(out.Conditions, metav1.Condition{Type: c.Type, Status: st, Reason: c.Reason,
			Message: c.Message, LastTransitionTime: metav1.NewTime(c.LastTransitionTime)})
	}
	if prev != nil {
		out.PinnedCommit, out.PinnedBy = prev.PinnedCommit, prev.PinnedBy
	}
	return out
}

// StatusFromAPI converts a cluster record's status back to what the rollout
// gate judges (drifted objects are left out).
func StatusFromAPI(s *v1alpha1.GitOpsStatus) gt.Status {
	if s == nil {
		return gt.Status{Health: gt.HealthUnknown}
	}
	out := gt.Status{
		AppliedRevision:   s.Revision,
		AppliedCommit:     s.AppliedCommit,
		AttemptedRevision: s.AttemptedRevision,
		AttemptedCommit:   s.AttemptedCommit,
		LastError:         s.Message,
		Health:            gt.Health(s.Health),
		HealthMessage:     s.HealthMessage,
		InventorySize:     int(s.InventorySize),
	}
	if s.LastAppliedTime != nil {
		out.LastAppliedTime = s.LastAppliedTime.Time
	}
	if s.LastAttemptTime != nil {
		out.LastAttemptTime = s.LastAttemptTime.Time
	}
	for _, c := range s.Conditions {
		out.Conditions = append(out.Conditions, gt.Condition{Type: c.Type, Status: c.Status == metav1.ConditionTrue,
			Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime.Time})
	}
	return out
}

func duration(d time.Duration) *metav1.Duration {
	if d == 0 {
		return nil
	}
	return &metav1.Duration{Duration: d}
}

func mtime(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	m := metav1.NewTime(t)
	return &m
}
