// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// The registry owns the GitOps parts of the Cluster record too: the source
// an admin sets (spec.gitops), the status the agent reports and the pin a
// rollout asks for (status.gitops). hub/rollout reads clusters through
// ListClusters and asks for pins with PinGitOps.

var gitopsReports = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "shoal_gitops_reports_total",
	Help: "GitOps status reports from agents, by whether the record was written (written, unchanged).",
}, []string{"result"})

// RegisterMetrics registers the registry's metrics.
func RegisterMetrics(reg prometheus.Registerer) error { return reg.Register(gitopsReports) }

// CheckNoCredentials refuses a source that would put credentials on the hub:
// an http(s) URL with user info (user:password@ or token@), or an ssh URL
// with a password. Credentials belong in the Secret that SecretRef names.
func CheckNoCredentials(src v1alpha1.GitOpsSource) error {
	u, err := url.Parse(src.URL)
	if err != nil || u.User == nil {
		return nil // Validate reports a bad URL
	}
	_, hasPassword := u.User.Password()
	if hasPassword || u.Scheme != "ssh" {
		return fmt.Errorf("%w: the repository URL carries credentials; put them in a Secret in the workload cluster and name it with secretRef", ErrInvalid)
	}
	return nil
}

// ValidateGitOpsSource checks a source the way the agent will, and that it
// holds no credentials.
func ValidateGitOpsSource(src v1alpha1.GitOpsSource) error {
	if err := src.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return CheckNoCredentials(src)
}

// SetGitOpsSource sets cluster's GitOps source (nil clears it) and drops a
// rollout pin.
func (r *Registry) SetGitOpsSource(ctx context.Context, cluster string, src *v1alpha1.GitOpsSource) (*v1alpha1.Cluster, int64, error) {
	if src != nil {
		if err := ValidateGitOpsSource(*src); err != nil {
			return nil, 0, err
		}
		cp := *src
		src = &cp
	}
	return r.updateCluster(ctx, cluster, func(c *v1alpha1.Cluster) {
		c.Spec.GitOps = src
		if c.Status.GitOps != nil {
			c.Status.GitOps.PinnedCommit, c.Status.GitOps.PinnedBy = "", ""
		}
	})
}

// reportRefresh is how old ReportedTime may grow before an unchanged report
// is written again; unchanged reports in between write nothing.
const reportRefresh = time.Minute

// ReportGitOpsStatus stores the status cluster's agent reported and returns
// the source the agent must sync (nil: none set). The hub's own fields of
// the report (ReportedTime, PinnedCommit, PinnedBy) are ignored. A report
// equal to the stored one is not written unless the stored one is older
// than reportRefresh.
func (r *Registry) ReportGitOpsStatus(ctx context.Context, cluster string, st v1alpha1.GitOpsStatus) (*v1alpha1.GitOpsSource, error) {
	cur, _, err := r.GetCluster(ctx, cluster)
	if err != nil {
		return nil, err
	}
	now := r.clock.Now()
	if sameReport(cur.Status.GitOps, received(st, cur.Status.GitOps, now), now) {
		gitopsReports.WithLabelValues("unchanged").Inc()
		return DesiredGitOpsSource(cur), nil
	}
	gitopsReports.WithLabelValues("written").Inc()
	c, _, err := r.updateCluster(ctx, cluster, func(c *v1alpha1.Cluster) {
		c.Status.GitOps = received(st, c.Status.GitOps, now)
	})
	if err != nil {
		return nil, err
	}
	return DesiredGitOpsSource(c), nil
}

// received is the report as stored: received now, keeping prev's pin.
func received(st v1alpha1.GitOpsStatus, prev *v1alpha1.GitOpsStatus, now time.Time) *v1alpha1.GitOpsStatus {
	out := &st
	at := metav1.NewTime(now)
	out.ReportedTime, out.PinnedCommit, out.PinnedBy = &at, "", ""
	if prev != nil {
		out.PinnedCommit, out.PinnedBy = prev.PinnedCommit, prev.PinnedBy
	}
	return out
}

// sameReport: next differs from the stored prev only in ReportedTime, and
// prev was received less than reportRefresh before now.
func sameReport(prev, next *v1alpha1.GitOpsStatus, now time.Time) bool {
	if prev == nil || prev.ReportedTime == nil || now.Sub(prev.ReportedTime.Time) >= reportRefresh {
		return false
	}
	a, b := *prev, *next
	a.ReportedTime, b.ReportedTime = nil, nil
	ja, errA := json.Marshal(a) // as stored: times in whole seconds
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// PinGitOps makes cluster sync commit on behalf of rollout by; commit ""
// lifts the pin (the cluster follows its source's ref again). Guards (the
// rollout leader's Held) must hold for the write.
func (r *Registry) PinGitOps(ctx context.Context, cluster, commit, by string, guards ...store.Cond) error {
	_, _, err := r.updateCluster(ctx, cluster, func(c *v1alpha1.Cluster) {
		if c.Status.GitOps == nil {
			c.Status.GitOps = &v1alpha1.GitOpsStatus{}
		}
		c.Status.GitOps.PinnedCommit, c.Status.GitOps.PinnedBy = commit, by
		if commit == "" {
			c.Status.GitOps.PinnedBy = ""
		}
	}, guards...)
	return err
}

// DesiredGitOpsSource is the source a cluster's agent must sync: its source
// with the rollout's pinned commit, if any, and the defaults filled in (the
// agent compares it with its own defaulted source and re-syncs when they
// differ); nil when the cluster has no source.
func DesiredGitOpsSource(c *v1alpha1.Cluster) *v1alpha1.GitOpsSource {
	if c.Spec.GitOps == nil {
		return nil
	}
	src := *c.Spec.GitOps
	if c.Status.GitOps != nil && c.Status.GitOps.PinnedCommit != "" {
		src.Ref.Commit, src.Ref.Tag = c.Status.GitOps.PinnedCommit, ""
	}
	src = src.WithDefaults()
	return &src
}

func (r *Registry) updateCluster(ctx context.Context, cluster string, fn func(*v1alpha1.Cluster),
	guards ...store.Cond) (*v1alpha1.Cluster, int64, error) {
	c, rev, err := r.updateLeased(ctx, cluster, func(c *v1alpha1.Cluster) error {
		fn(c)
		return nil
	}, guards...)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: cluster %q", ErrNotFound, cluster)
	}
	return c, rev, err
}
