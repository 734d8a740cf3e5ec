// SPDX-License-Identifier: Apache-2.0

package fence

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// DefaultTimeout is the agent's default fence timeout: the hub's default
// (hub/registry.DefaultFenceTimeout), which the hub extends by its margin
// before it counts the cluster Lost.
const DefaultTimeout = 5 * time.Minute

// Stopper stops every gang member of the workload cluster on the agent's
// own decision, reporting each Failed with reason (podsync.Syncer.FailAll).
type Stopper interface {
	FailAll(ctx context.Context, reason, msg string) error
}

// Fence tracks the agent's last successful exchange with the hub and stops
// the members when it is older than the timeout (see the package doc).
type Fence struct {
	// configured is the agent's own timeout (--fence-timeout).
	configured time.Duration
	clock      clock.WithTicker
	stopper    Stopper

	mu sync.Mutex
	// timeout is the timeout in force: configured, or the hub's when that
	// is shorter (Limit).
	timeout time.Duration
	// hub is the hub's fence timeout last told (0: none yet).
	hub time.Duration
	// last is the start of the latest successful exchange (zero: none since
	// the agent started).
	last time.Time
	// fenced is set when the members were stopped, until the next exchange.
	fenced bool
	// stopped is set when the last FailAll of this fence succeeded.
	stopped bool
	// start is when the fence was built: the timeout runs from it until the
	// first exchange.
	start time.Time
}

// New returns a Fence that stops members through s after timeout (0: the
// default) without an exchange. c is the time source (nil: real time).
func New(timeout time.Duration, s Stopper, c clock.WithTicker) *Fence {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if c == nil {
		c = clock.RealClock{}
	}
	return &Fence{configured: timeout, timeout: timeout, clock: c, stopper: s, start: c.Now()}
}

// Timeout is the fence timeout in force (see Limit).
func (f *Fence) Timeout() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.timeout
}

// Contact records a successful exchange with the hub that started at sent
// (the time the request left, so that the agent's count never starts after
// the hub's own). It lifts the fence.
func (f *Fence) Contact(sent time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sent.After(f.last) {
		f.last = sent
	}
	if f.fenced && f.clock.Since(f.last) <= f.timeout {
		f.fenced, f.stopped = false, false
	}
}

// Allowed reports whether members may be created now: the agent has
// reached the hub since it started, within the timeout.
func (f *Fence) Allowed() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.last.IsZero():
		return &FencedError{Reason: "the agent has not reached the hub since it started"}
	case f.fenced || f.clock.Since(f.last) > f.timeout:
		return &FencedError{Reason: fmt.Sprintf("the agent has not reached the hub for more than the fence timeout %s", f.timeout)}
	}
	return nil
}

// Fenced reports whether the members were stopped and no exchange followed.
func (f *Fence) Fenced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fenced
}

// FencedError refuses a member create while the agent is fenced.
type FencedError struct{ Reason string }

func (e *FencedError) Error() string { return "fenced: " + e.Reason }

// Run checks the fence every interval (a tenth of the timeout, between
// 100 ms and a second) until ctx ends.
func (f *Fence) Run(ctx context.Context) error {
	t := f.clock.NewTicker(min(time.Second, max(100*time.Millisecond, f.Timeout()/10)))
	defer t.Stop()
	for {
		f.Check(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Check stops the members once the timeout has passed without an exchange
// (counted from the start before the first one); a failed stop is retried
// at the next check.
func (f *Fence) Check(ctx context.Context) {
	f.mu.Lock()
	since := f.last
	if since.IsZero() {
		since = f.start
	}
	silent, timeout := f.clock.Since(since), f.timeout
	if silent <= timeout || f.stopped {
		f.mu.Unlock()
		return
	}
	first := !f.fenced
	f.fenced = true
	f.mu.Unlock()
	log := klog.FromContext(ctx)
	msg := fmt.Sprintf("the agent has not reached the hub for %s, longer than the fence timeout %s; member stopped",
		silent.Round(time.Second), timeout)
	if first {
		log.Info("Fenced: the hub is out of reach; stopping every member", "silent", silent.Round(time.Second), "timeout", timeout)
		metricFenced.Inc()
	}
	if err := f.stopper.FailAll(ctx, v1alpha1.ReasonFenced, msg); err != nil {
		log.Error(err, "Fence: stopping members failed; retrying")
		return
	}
	f.mu.Lock()
	if f.fenced { // no exchange meanwhile
		f.stopped = true
	}
	f.mu.Unlock()
}
