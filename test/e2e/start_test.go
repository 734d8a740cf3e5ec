// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/app"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/store"
)

// startTimeout is the start deadline of the dispatcher in
// TestStartDeadlineTearsDownWholeGang.
const startTimeout = 15 * time.Second

// startRuns counts the runs of TestStartDeadlineTearsDownWholeGang.
var startRuns atomic.Int32

// TestStartDeadlineTearsDownWholeGang: every member of a two-member gang
// prepares and the dispatcher commits; before the commit reaches the
// agents (the test holds the commit stamps), a local pod takes the GPUs of
// member 1's node. Member 0 runs, member 1 stays Pending; at the start
// deadline the whole gang is torn down, with nothing left anywhere (hub
// pods, local pods, reservation), and the job is requeued with reason
// StartTimeout naming member 1 and its cluster, not counted as a restart.
func TestStartDeadlineTearsDownWholeGang(t *testing.T) {
	skipShort(t)
	// A fresh name per run: a resubmitted name is the cancelled job (-count).
	job := fmt.Sprintf("start-late-%d", startRuns.Add(1))
	c := spare()
	hold := holdCommits(t, job, func(cfg *app.Config) {
		// Backoff long enough that the job is not placed again in the test.
		cfg.Dispatch.StartTimeout, cfg.Dispatch.Backoff, cfg.Dispatch.MaxBackoff = startTimeout, time.Hour, time.Hour
	})

	submit(t, newJob(job, "e2e", 2, 8, onCluster(c)))
	var (
		j   *v1alpha1.Job
		rev int64
	)
	eventually(t, time.Minute, "gang committed", func(ctx context.Context) (bool, error) {
		var err error
		if j, rev, err = h.jobs.Get(ctx, job); err != nil {
			return false, err
		}
		d := jobs.DispatchOf(j)
		return d != nil && d.Phase == v1alpha1.DispatchCommitted, fmt.Errorf("phase %s dispatch %+v", j.Status.Phase, d)
	})
	committed := time.Now()
	late := j.Status.Members[1]
	squat(t, c, []string{late.Node}, 8)
	events := h.jobs.Watch(t.Context(), rev, job)
	hold.release()

	eventually(t, startTimeout, "member 0 running, member 1 pending", func(ctx context.Context) (bool, error) {
		hp, err := hubPods(ctx, job)
		if err != nil {
			return false, err
		}
		phases := map[string]corev1.PodPhase{}
		for _, p := range hp {
			phases[p.Labels[v1alpha1.LabelMember]] = p.Status.Phase
		}
		return phases["0"] == corev1.PodRunning && phases["1"] == corev1.PodPending, fmt.Errorf("member phases %v", phases)
	})

	var (
		aborting *v1alpha1.DispatchStatus
		abortAt  time.Time
	)
	requeued := waitEvent(t, events, startTimeout+time.Minute, func(j *v1alpha1.Job) bool {
		if d := j.Status.Dispatch; d != nil && d.Phase == v1alpha1.DispatchAborting && aborting == nil {
			aborting, abortAt = d.DeepCopy(), time.Now()
		}
		return j.Status.Phase == v1alpha1.JobPending
	})
	requeuedAfter := time.Since(committed)
	if aborting == nil || aborting.Reason != v1alpha1.ReasonStartTimeout {
		t.Fatalf("no StartTimeout abort recorded in status.dispatch before the requeue: %+v", aborting)
	}
	if requeuedAfter < startTimeout-2*time.Second { // the deadline counts from the commit time, stored to the second
		t.Fatalf("requeued %v after the commit, before the %v start deadline", requeuedAfter, startTimeout)
	}
	pc := condition(requeued, v1alpha1.JobConditionPlaced)
	want := fmt.Sprintf("member 1 on %s (node %s", c, late.Node)
	if pc == nil || pc.Reason != v1alpha1.ReasonStartTimeout || !strings.Contains(pc.Message, "1 of 2 members did not start") ||
		!strings.Contains(pc.Message, want) {
		t.Fatalf("placed condition %+v, want reason %s naming %q", pc, v1alpha1.ReasonStartTimeout, want)
	}
	if requeued.Status.Restarts != 0 || requeued.Annotations[v1alpha1.AnnotationAborts] != "1" {
		t.Fatalf("restarts %d aborts %q: a start timeout is an abort, not a restart",
			requeued.Status.Restarts, requeued.Annotations[v1alpha1.AnnotationAborts])
	}
	if _, _, err := ledger.New(h.st).Get(t.Context(), job); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("reservation after the requeue: %v", err)
	}
	waitNothingLeft(t, job, 30*time.Second)
	// The deadline counts from status.dispatch.time, stored to the second:
	// up to a second before commit+startTimeout as the test sees it.
	t.Logf("start deadline %v: abort decided %.1fs after the commit, job requeued (members gone on the hub, "+
		"reservation released) %.1fs after, nothing left anywhere %.1fs after; %s",
		startTimeout, abortAt.Sub(committed).Seconds(), requeuedAfter.Seconds(), time.Since(committed).Seconds(), pc.Message)
}

// waitEvent reads job events until match holds for one, and returns that
// job.
func waitEvent(t *testing.T, events <-chan jobs.Event, timeout time.Duration, match func(*v1alpha1.Job) bool) *v1alpha1.Job {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("job watch ended")
			}
			if ev.Err != nil {
				t.Fatalf("job watch: %v", ev.Err)
			}
			if ev.Job != nil && match(ev.Job) {
				return ev.Job
			}
		case <-deadline:
			t.Fatalf("no matching job event within %v", timeout)
		}
	}
}

// holdCommits replaces the hub's dispatcher by one whose commit stamps
// on job's hub pods wait until the returned hold is released (and whose
// config mutate changes, when not nil); the usual dispatcher is back, and
// the hold released, when the test ends.
func holdCommits(t *testing.T, job string, mutate func(*app.Config)) *commitHold {
	hold := &commitHold{prefix: job + "-e", released: make(chan struct{})}
	h.dispStop()
	h.dispStop = h.run(h.rctx, h.dispatcherWith(func(cfg *app.Config) {
		cfg.HubCluster = rest.CopyConfig(cfg.HubCluster)
		cfg.HubCluster.Wrap(hold.wrap)
		if mutate != nil {
			mutate(cfg)
		}
	}).Run)
	t.Cleanup(func() {
		hold.release()
		h.dispStop()
		h.dispStop = h.run(h.rctx, h.newDispatcher().Run)
	})
	return hold
}

// dispatcherWith is a dispatcher replica whose config mutate changes.
func (h *hub) dispatcherWith(mutate func(*app.Config)) *app.Hub {
	cfg, err := h.config([]string{h.st.ClientURL()}, app.Dispatcher)
	if err != nil {
		panic(err)
	}
	mutate(&cfg)
	r, err := app.New(cfg)
	if err != nil {
		panic(err)
	}
	return r
}

// commitHold holds the dispatcher's patches of the hub pods whose names
// start with prefix (the commit stamps of one job) until release.
type commitHold struct {
	prefix   string
	released chan struct{}
	once     sync.Once
}

func (c *commitHold) release() { c.once.Do(func() { close(c.released) }) }

func (c *commitHold) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodPatch && strings.Contains(req.URL.Path, "/pods/"+c.prefix) {
			select {
			case <-c.released:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		}
		return rt.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
