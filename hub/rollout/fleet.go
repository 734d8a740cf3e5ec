package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	gt "github.com/shoal-dev/shoal/federation/gitopstypes"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// Fleet keeps the clusters' GitOps sources, reported statuses and rollout
// pins on the cluster records (the registry's collection). It is safe for
// concurrent use.
type Fleet struct {
	clusters *store.Collection[*v1alpha1.Cluster]
	clock    clock.PassiveClock
}

// NewFleet returns the Fleet over s; clk is injected for tests (nil: real).
func NewFleet(s *store.Store, clk clock.PassiveClock) *Fleet {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Fleet{clusters: store.NewCollection(s, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]()), clock: clk}
}

// CheckNoCredentials refuses a source that would put credentials on the hub:
// an http(s) URL with user info (user:password@ or token@), or an ssh URL
// with a password. Credentials belong in the Secret that SecretRef names.
func CheckNoCredentials(src gt.Source) error {
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

// ValidateSource checks a source the way the agent will, and that it holds
// no credentials.
func ValidateSource(src gt.Source) error {
	if err := src.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return CheckNoCredentials(src)
}

// SetSource sets cluster's source (nil clears it) and drops a rollout pin.
func (f *Fleet) SetSource(ctx context.Context, cluster string, src *gt.Source) (*v1alpha1.Cluster, int64, error) {
	if src != nil {
		if err := ValidateSource(*src); err != nil {
			return nil, 0, err
		}
	}
	return f.update(ctx, cluster, func(c *v1alpha1.Cluster) {
		c.Spec.GitOps = nil
		if src != nil {
			c.Spec.GitOps = SourceToAPI(*src)
		}
		if c.Status.GitOps != nil {
			c.Status.GitOps.PinnedCommit, c.Status.GitOps.PinnedBy = "", ""
		}
	})
}

// reportRefresh is how old ReportedTime may grow before an unchanged report
// is written again; unchanged reports in between write nothing.
const reportRefresh = time.Minute

// Report stores the status cluster's agent reported and returns the source
// the agent must sync (nil: none set). A report equal to the stored one is
// not written unless the stored one is older than reportRefresh.
func (f *Fleet) Report(ctx context.Context, cluster string, st gt.Status) (*gt.Source, error) {
	cur, _, err := f.clusters.Get(ctx, cluster)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: cluster %q", ErrNotFound, cluster)
	}
	if err != nil {
		return nil, err
	}
	now := f.clock.Now()
	if sameReport(cur.Status.GitOps, StatusToAPI(st, cur.Status.GitOps, now), now) {
		reports.WithLabelValues("unchanged").Inc()
		return Desired(cur), nil
	}
	reports.WithLabelValues("written").Inc()
	c, _, err := f.update(ctx, cluster, func(c *v1alpha1.Cluster) {
		c.Status.GitOps = StatusToAPI(st, c.Status.GitOps, now)
	})
	if err != nil {
		return nil, err
	}
	return Desired(c), nil
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

// Pin makes cluster sync commit on behalf of rollout by; commit "" lifts
// the pin (the cluster follows its source's ref again).
func (f *Fleet) Pin(ctx context.Context, cluster, commit, by string) error {
	_, _, err := f.update(ctx, cluster, func(c *v1alpha1.Cluster) {
		if c.Status.GitOps == nil {
			c.Status.GitOps = &v1alpha1.GitOpsStatus{}
		}
		c.Status.GitOps.PinnedCommit, c.Status.GitOps.PinnedBy = commit, by
		if commit == "" {
			c.Status.GitOps.PinnedBy = ""
		}
	})
	return err
}

// Desired is the source a cluster's agent must sync: its source with the
// rollout's pinned commit, if any, and the defaults filled in (the agent
// compares it with its own defaulted source and re-syncs when they differ);
// nil when the cluster has no source.
func Desired(c *v1alpha1.Cluster) *gt.Source {
	if c.Spec.GitOps == nil {
		return nil
	}
	src := SourceFromAPI(c.Spec.GitOps)
	if c.Status.GitOps != nil && c.Status.GitOps.PinnedCommit != "" {
		src.Ref.Commit, src.Ref.Tag = c.Status.GitOps.PinnedCommit, ""
	}
	src = src.WithDefaults()
	return &src
}

// Clusters lists the clusters matching selector (label-selector syntax).
func (f *Fleet) Clusters(ctx context.Context, selector string) ([]*v1alpha1.Cluster, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("%w: selector %q: %w", ErrInvalid, selector, err)
	}
	res, err := f.clusters.List(ctx, store.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []*v1alpha1.Cluster
	for _, it := range res.Items {
		if sel.Matches(labels.Set(it.Object.Labels)) {
			out = append(out, it.Object)
		}
	}
	return out, nil
}

func (f *Fleet) update(ctx context.Context, cluster string, fn func(*v1alpha1.Cluster)) (*v1alpha1.Cluster, int64, error) {
	c, rev, err := f.clusters.GuaranteedUpdate(ctx, cluster, func(c *v1alpha1.Cluster) (*v1alpha1.Cluster, error) {
		fn(c)
		return c, nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: cluster %q", ErrNotFound, cluster)
	}
	return c, rev, err
}
