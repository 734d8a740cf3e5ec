// SPDX-License-Identifier: Apache-2.0

package hubkube

import (
	"context"
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// ProbeInterval is how often a Probe asks the hub cluster's API server.
const ProbeInterval = time.Second

// probeTimeout bounds one probe request: well inside the contact window,
// so that a link that hangs is counted down in time.
const probeTimeout = 2 * time.Second

// Probe tells whether the agent's link to the hub cluster works: every
// ProbeInterval it sends GET /readyz to the hub cluster's API server
// through the agent's hub cluster client (the same transport as its pod
// watches, so a cut of that link stops it too). Any HTTP answer counts,
// a refusal or a "not ready" included: the API server was reached. The
// agent's heartbeats say the hub cluster is reachable, and count for its
// fence, only when a probe that started at most
// v1alpha1.HubClusterContactWindow before the heartbeat left was answered
// (Reachable).
type Probe struct {
	client rest.Interface
	clock  clock.WithTicker

	mu sync.Mutex
	// last is the start of the latest answered probe (zero: none yet).
	last time.Time
	// down is set while the latest probe got no answer (for the log).
	down bool
	// onChange is told when the answer changes (OnChange).
	onChange func()
}

// OnChange sets f to be called (outside the probe's lock) when what
// Reachable says may have changed at once: the first probe answered, or
// probes stopped or started being answered (the agent's heartbeat then
// leaves at once: its first one, sent before any probe was answered, says
// the hub cluster is not reached, and the hub places nothing on the
// cluster until the next, an interval later). Call before Run.
func (p *Probe) OnChange(f func()) { p.onChange = f }

// NewProbe returns a Probe that asks through client (the hub cluster
// client's discovery REST client). c is the time source (nil: real time).
func NewProbe(client rest.Interface, c clock.WithTicker) *Probe {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Probe{client: client, clock: c}
}

// Run probes every ProbeInterval until ctx ends.
func (p *Probe) Run(ctx context.Context) error {
	t := p.clock.NewTicker(ProbeInterval)
	defer t.Stop()
	for {
		p.Once(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Once sends one probe and records its start if it was answered.
func (p *Probe) Once(ctx context.Context) {
	start := p.clock.Now()
	rctx, cancel := context.WithTimeout(ctx, probeTimeout)
	err := p.client.Get().AbsPath("/readyz").Do(rctx).Error()
	cancel()
	var status apierrors.APIStatus
	answered := err == nil || errors.As(err, &status)
	p.mu.Lock()
	was, first := p.down, answered && p.last.IsZero()
	p.down = !answered
	if answered && start.After(p.last) {
		p.last = start
	}
	p.mu.Unlock()
	if p.onChange != nil && (first || answered == was) && ctx.Err() == nil {
		p.onChange()
	}
	switch {
	case !answered && !was && ctx.Err() == nil:
		klog.FromContext(ctx).Error(err, "The hub cluster's API server does not answer: heartbeats no longer count for the fence")
	case answered && was:
		klog.FromContext(ctx).Info("The hub cluster's API server answers again")
	}
}

// Reachable reports whether a probe that started at most
// v1alpha1.HubClusterContactWindow before sent was answered.
func (p *Probe) Reachable(sent time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.last.IsZero() && !p.last.Before(sent.Add(-v1alpha1.HubClusterContactWindow))
}
