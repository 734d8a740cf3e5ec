// SPDX-License-Identifier: Apache-2.0

// Package intake drives a running shoal-hub's job intake as users'
// submissions go: N clients over one gRPC/mTLS connection each, submitting
// one job per call (Jobs/Submit), many per call (Jobs/SubmitBatch) or many
// per message of one stream (Jobs/SubmitStream), in stages so that the
// figures show how intake changes as the store grows.
// For each stage it reports the accepted jobs per second, the client-side
// latency of a call and the hub's own (server-side) latency of a call,
// read from the hub's shoal_hub_grpc_request_duration_seconds histogram
// before and after the stage.
package intake

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Options say what load Run offers.
type Options struct {
	// Clients submit concurrently, each on its own connection (default 16).
	Clients int
	// Jobs is the number of jobs to submit in all (default 20,000).
	Jobs int
	// Batch is the number of jobs per call: 1 uses Submit, more SubmitBatch.
	// With Stream, it is the number of jobs per message.
	Batch int
	// Stream sends the batches over SubmitStream, one stream per client
	// and stage, up to streamWindow messages ahead of the answers.
	Stream bool
	// Stages splits Jobs into this many equal stages (default 10).
	Stages int
	// Queue is every job's queue; it must exist.
	Queue string
	// Prefix starts every job's name (default "intake"), so that runs on
	// the same hub do not collide.
	Prefix string
	// MaxDuration stops the run after the stage that passes it (0: none),
	// for a hub too slow to take Jobs in reasonable time.
	MaxDuration time.Duration
	// MetricsURL is the hub's /metrics, for the server-side latency.
	MetricsURL string
	// Cordon says the fleet's clusters were cordoned before the load (the
	// caller does it): no gang starts beside the intake.
	Cordon bool
}

func (o *Options) defaults() {
	if o.Clients <= 0 {
		o.Clients = 16
	}
	if o.Jobs <= 0 {
		o.Jobs = 20000
	}
	if o.Batch <= 0 {
		o.Batch = 1
	}
	if o.Stages <= 0 {
		o.Stages = 10
	}
	if o.Prefix == "" {
		o.Prefix = "intake"
	}
}

// Stage is what one stage measured.
type Stage struct {
	// StoredBefore and StoredAfter are the jobs this run had stored before
	// and after the stage.
	StoredBefore int `json:"storedBefore"`
	StoredAfter  int `json:"storedAfter"`
	// Accepted jobs, and the stage's accepted jobs per second.
	Accepted   int     `json:"accepted"`
	JobsPerSec float64 `json:"jobsPerSec"`
	Seconds    float64 `json:"seconds"`
	// Calls are the stage's calls (streams: messages answered), and
	// ClientP50ms and ClientP99ms their latency as the client saw it (a
	// stream's message: from its send to its answer).
	Calls       int     `json:"calls"`
	ClientP50ms float64 `json:"clientCallP50ms"`
	ClientP99ms float64 `json:"clientCallP99ms"`
	// ServerP50ms and ServerP99ms are the hub's latency of the stage's
	// calls (linear interpolation inside the histogram's buckets); for
	// streams, the life of each client's stream of the stage.
	ServerP50ms float64 `json:"serverCallP50ms"`
	ServerP99ms float64 `json:"serverCallP99ms"`
}

// Result is what Run measured.
type Result struct {
	Clients    int     `json:"clients"`
	Batch      int     `json:"batch"`
	Method     string  `json:"method"`
	Accepted   int     `json:"accepted"`
	Seconds    float64 `json:"seconds"`
	JobsPerSec float64 `json:"jobsPerSec"`
	Stages     []Stage `json:"stages"`
	// Cordoned: the clusters were cordoned (Options.Cordon).
	Cordoned bool `json:"cordoned"`
	// BatchTransactions are the hub's store transactions of batched
	// submissions during the run, by outcome (committed, queue_moved,
	// split: shoal_job_batch_transactions_total).
	BatchTransactions map[string]int `json:"batchTransactions,omitempty"`
	// StoreConflicts are the hub's store transactions during the run that
	// failed a guard (shoal_store_requests_total{operation="txn",
	// result="conflict"}): each is a submission, or a batch's transaction,
	// written again.
	StoreConflicts int `json:"storeConflicts"`
}

// Dial opens a connection to the hub; Run opens Clients of them.
type Dial func() (*grpc.ClientConn, error)

// Run offers the load and returns the figures. A refused job (any error,
// or a batch item refused) fails the run: the figures count accepted jobs.
func Run(ctx context.Context, dial Dial, opts Options) (Result, error) {
	opts.defaults()
	method := "Jobs/Submit"
	switch {
	case opts.Stream:
		method = "Jobs/SubmitStream"
	case opts.Batch > 1:
		method = "Jobs/SubmitBatch"
	}
	res := Result{Clients: opts.Clients, Batch: opts.Batch, Method: method, Cordoned: opts.Cordon}
	conns := make([]shoalv1.JobsClient, opts.Clients)
	for i := range conns {
		c, err := dial()
		if err != nil {
			return res, err
		}
		defer func() { _ = c.Close() }()
		conns[i] = shoalv1.NewJobsClient(c)
	}
	before, err := scrapeCounts(ctx, opts.MetricsURL)
	if err != nil {
		return res, err
	}
	per := (opts.Jobs + opts.Stages - 1) / opts.Stages
	start := time.Now()
	stored := 0
	for s := 0; s < opts.Stages && stored < opts.Jobs; s++ {
		n := min(per, opts.Jobs-stored)
		st, err := runStage(ctx, conns, opts, method, stored, n)
		if err != nil {
			return res, fmt.Errorf("stage %d (jobs %d to %d): %w", s, stored, stored+n, err)
		}
		res.Stages = append(res.Stages, st)
		stored = st.StoredAfter
		if opts.MaxDuration > 0 && time.Since(start) > opts.MaxDuration {
			break
		}
	}
	res.Seconds = time.Since(start).Seconds()
	for _, st := range res.Stages {
		res.Accepted += st.Accepted
	}
	res.JobsPerSec = float64(res.Accepted) / res.Seconds
	after, err := scrapeCounts(ctx, opts.MetricsURL)
	if err != nil {
		return res, err
	}
	res.StoreConflicts = int(after.conflicts - before.conflicts)
	for k, v := range after.outcomes {
		if n := int(v - before.outcomes[k]); n > 0 {
			if res.BatchTransactions == nil {
				res.BatchTransactions = map[string]int{}
			}
			res.BatchTransactions[k] = n
		}
	}
	return res, nil
}

// runStage submits jobs first..first+n-1 from every client.
func runStage(ctx context.Context, conns []shoalv1.JobsClient, opts Options, method string, first, n int) (Stage, error) {
	before, err := scrapeHistogram(ctx, opts.MetricsURL, method)
	if err != nil {
		return Stage{}, err
	}
	var next atomic.Int64
	claim := func() (lo, hi int, ok bool) {
		lo = int(next.Add(int64(opts.Batch))) - opts.Batch
		return first + lo, first + min(lo+opts.Batch, n), lo < n
	}
	client := submitCalls
	if opts.Stream {
		client = submitStream
	}
	var accepted int
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for _, cl := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, l, err := client(ctx, cl, opts, claim)
			mu.Lock()
			defer mu.Unlock()
			accepted += k
			lat = append(lat, l...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if firstErr != nil {
		return Stage{}, firstErr
	}
	after, err := scrapeHistogram(ctx, opts.MetricsURL, method)
	if err != nil {
		return Stage{}, err
	}
	slices.Sort(lat)
	d := after.minus(before)
	k := accepted
	return Stage{
		StoredBefore: first, StoredAfter: first + k, Accepted: k, Seconds: secs, JobsPerSec: float64(k) / secs,
		Calls: len(lat), ClientP50ms: ms(quantile(lat, 0.5)), ClientP99ms: ms(quantile(lat, 0.99)),
		ServerP50ms: d.quantile(0.5) * 1000, ServerP99ms: d.quantile(0.99) * 1000,
	}, nil
}

// claimFunc claims the next jobs lo..hi-1 of a stage for a client; ok is
// false when the stage has none left.
type claimFunc func() (lo, hi int, ok bool)

// submitCalls submits the jobs it claims one call at a time (submit) until
// none are left or a call fails, and returns how many the hub accepted
// and the latency of each call.
func submitCalls(ctx context.Context, cl shoalv1.JobsClient, opts Options, claim claimFunc) (int, []time.Duration, error) {
	accepted := 0
	var lat []time.Duration
	for {
		lo, hi, ok := claim()
		if !ok {
			return accepted, lat, nil
		}
		t := time.Now()
		k, err := submit(ctx, cl, opts, lo, hi)
		lat = append(lat, time.Since(t))
		accepted += k
		if err != nil {
			return accepted, lat, err
		}
	}
}

// submit submits jobs lo..hi-1 in one call and returns how many the hub
// accepted.
func submit(ctx context.Context, cl shoalv1.JobsClient, opts Options, lo, hi int) (int, error) {
	if opts.Batch == 1 {
		_, err := cl.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: Job(opts.Prefix, lo, opts.Queue)}})
		if err != nil {
			return 0, fmt.Errorf("submit %s-%d: %w", opts.Prefix, lo, err)
		}
		return 1, nil
	}
	resp, err := cl.SubmitBatch(ctx, batch(opts, lo, hi))
	if err != nil {
		return 0, fmt.Errorf("submit batch %s-%d..%d: %w", opts.Prefix, lo, hi-1, err)
	}
	return acceptedOf(opts, resp, lo, hi)
}

// batch is the request of jobs lo..hi-1.
func batch(opts Options, lo, hi int) *shoalv1.SubmitJobBatchRequest {
	req := &shoalv1.SubmitJobBatchRequest{}
	for i := lo; i < hi; i++ {
		req.Jobs = append(req.Jobs, &shoalv1.Object{Json: Job(opts.Prefix, i, opts.Queue)})
	}
	return req
}

// acceptedOf counts the jobs lo..hi-1 that resp says the hub accepted; a
// refused job or a missing result is the error.
func acceptedOf(opts Options, resp *shoalv1.SubmitJobBatchResponse, lo, hi int) (int, error) {
	k := 0
	for i, r := range resp.GetResults() {
		if r.GetError() != nil {
			return k, fmt.Errorf("job %s-%d refused: %s", opts.Prefix, lo+i, r.GetError().GetMessage())
		}
		k++
	}
	if k != hi-lo {
		return k, fmt.Errorf("batch of %d jobs answered with %d results", hi-lo, k)
	}
	return k, nil
}

// Job is the JSON of the i-th load job: one member with one GPU and a
// container, so that the hub's dry-run of the pod template runs for each.
func Job(prefix string, i int, queue string) []byte {
	b, _ := json.Marshal(map[string]any{ // maps of strings and ints always marshal
		"apiVersion": v1alpha1.APIVersion, "kind": v1alpha1.KindJob,
		"metadata": map[string]any{"name": fmt.Sprintf("%s-%d", prefix, i)},
		"spec": map[string]any{
			"queue": queue,
			"gang":  map[string]any{"members": 1, "gpusPerMember": 1},
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "main", "image": "busybox", "command": []string{"sleep", "3600"}},
			}}},
		},
	})
	return b
}

func quantile(s []time.Duration, q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
