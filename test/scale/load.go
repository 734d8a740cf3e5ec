// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// Queue is the queue every job of the harness is submitted to.
const Queue = "scale"

// jobName is the name of the i-th job.
func jobName(i int) string { return fmt.Sprintf("s-%06d", i) }

// buildJob is the i-th job of the mix: its gang shape drawn in turn by
// weight, its run time spread evenly between the bounds.
func (c *Config) buildJob(i int) *v1alpha1.Job {
	gangs := c.Gangs
	if len(gangs) == 0 {
		gangs = DefaultGangs
	}
	total := 0
	for _, g := range gangs {
		total += g.Weight
	}
	pick, g := i%total, gangs[0]
	for _, x := range gangs {
		if pick < x.Weight {
			g = x
			break
		}
		pick -= x.Weight
	}
	run := c.RunMin
	if c.RunMax > c.RunMin {
		run += time.Duration(int64(i*7919) % int64(c.RunMax-c.RunMin+1))
	}
	return testjob.New(jobName(i)).Queue(Queue).Members(g.Members).GPUs(g.GPUs).With(func(j *v1alpha1.Job) {
		j.Spec.Template.Annotations = map[string]string{AnnotationRunFor: run.Round(time.Millisecond).String()}
	}).Obj()
}

// tracker follows every job through the hub's job watch.
type tracker struct {
	mu        sync.Mutex
	submitted map[string]time.Time // name -> when its Submit call began
	placed    map[string]time.Time // name -> when first seen past Pending
	running   map[string]bool
	phase     map[string]v1alpha1.JobPhase
	aborts    map[string]bool // jobs whose dispatch aborted at least once
	changed   chan struct{}
}

func newTracker() *tracker {
	return &tracker{submitted: map[string]time.Time{}, placed: map[string]time.Time{}, running: map[string]bool{},
		phase: map[string]v1alpha1.JobPhase{}, aborts: map[string]bool{}, changed: make(chan struct{}, 1)}
}

// watch follows the hub's job watch from now until ctx ends, resuming
// after the last revision seen when the stream breaks.
func (t *tracker) watch(ctx context.Context, jobs shoalv1.JobsClient, ready chan<- struct{}) {
	var rev int64
	for ctx.Err() == nil {
		stream, err := jobs.Watch(ctx, &shoalv1.WatchJobsRequest{Revision: rev})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if ready != nil {
			close(ready)
			ready = nil
		}
		for {
			ev, err := stream.Recv()
			if err != nil {
				break
			}
			now := time.Now()
			var j v1alpha1.Job
			if err := json.Unmarshal(ev.GetObject().GetJson(), &j); err != nil {
				continue
			}
			rev = max(rev, ev.GetObject().GetRevision()+1)
			t.observe(now, &j)
		}
	}
}

func (t *tracker) observe(now time.Time, j *v1alpha1.Job) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := j.Status.Phase
	t.phase[j.Name] = p
	if _, ok := t.placed[j.Name]; !ok && p != "" && p != v1alpha1.JobPending && p != v1alpha1.JobCancelled && p != v1alpha1.JobFailed {
		t.placed[j.Name] = now
	}
	if p == v1alpha1.JobRunning || p == v1alpha1.JobSucceeded {
		t.running[j.Name] = true
	}
	if d := j.Status.Dispatch; d != nil && d.Phase == v1alpha1.DispatchAborting {
		t.aborts[j.Name] = true
	}
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// counts returns how many jobs are placed (at some time), ever ran, and
// are in each phase now.
func (t *tracker) counts() (placed, ran int, phases map[v1alpha1.JobPhase]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	phases = map[v1alpha1.JobPhase]int{}
	for _, p := range t.phase {
		phases[p]++
	}
	return len(t.placed), len(t.running), phases
}

// slowest is the n placed jobs with the longest submit → placed, the
// slowest first.
func (t *tracker) slowest(n int) []LatePlacement {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []LatePlacement
	for name, at := range t.placed {
		if s, ok := t.submitted[name]; ok {
			out = append(out, LatePlacement{Job: name, Seconds: at.Sub(s).Seconds(), submitted: s})
		}
	}
	slices.SortFunc(out, func(a, b LatePlacement) int { return cmp.Compare(b.Seconds, a.Seconds) })
	return out[:min(n, len(out))]
}

// submitLatencies is submit → placed of every placed job.
func (t *tracker) submitLatencies() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []time.Duration
	for name, at := range t.placed {
		if s, ok := t.submitted[name]; ok {
			out = append(out, at.Sub(s))
		}
	}
	return out
}

// submit submits every job of the config at its rate from c.Submitters
// clients, each on a connection of its own (dial); it returns the submit
// call latencies and the errors.
func (c *Config) submit(ctx context.Context, dial func() (shoalv1.JobsClient, func() error, error), t *tracker) ([]time.Duration, []string) {
	lim := rate.NewLimiter(rate.Inf, 1)
	if c.Rate > 0 {
		lim = rate.NewLimiter(rate.Limit(c.Rate), max(1, int(c.Rate/10)))
	}
	next := make(chan int)
	var mu sync.Mutex
	var lat []time.Duration
	var errs []string
	var wg sync.WaitGroup
	type client struct {
		jobs  shoalv1.JobsClient
		close func() error
	}
	var clients []client
	for range c.Submitters {
		jobs, closeConn, err := dial()
		if err != nil {
			for _, cl := range clients {
				_ = cl.close()
			}
			return nil, []string{fmt.Sprintf("dial the hub: %v", err)}
		}
		clients = append(clients, client{jobs, closeConn})
	}
	for _, cl := range clients {
		jobs, closeConn := cl.jobs, cl.close
		wg.Go(func() {
			defer func() { _ = closeConn() }()
			for i := range next {
				b, err := json.Marshal(c.buildJob(i))
				if err != nil {
					panic(err) // a Job always encodes
				}
				start := time.Now()
				_, err = jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: b}})
				d := time.Since(start)
				// Recorded after the call, so that the tracker's lock
				// (the watch takes it for every event) is in neither time.
				t.mu.Lock()
				t.submitted[jobName(i)] = start
				t.mu.Unlock()
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Sprintf("%s: %v", jobName(i), err))
				} else {
					lat = append(lat, d)
				}
				mu.Unlock()
			}
		})
	}
	for i := range c.Jobs {
		if lim.Wait(ctx) != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return lat, errs
}
