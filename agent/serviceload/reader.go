// SPDX-License-Identifier: Apache-2.0

package serviceload

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/agent/hubclient"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Reporter passes the load of a service in this cluster on to the hub;
// *hubclient.Client is one. Its errors carry the hub's gRPC status.
type Reporter interface {
	ReportServiceLoad(ctx context.Context, service string, value int64) error
}

// Defaults of a Reader (see the Options).
const (
	// DefaultInterval is the time between two rounds of reads and reports
	// (the hub holds a report for a minute).
	DefaultInterval = 5 * time.Second
	// DefaultReadTimeout bounds the read of one pod's metrics page.
	DefaultReadTimeout = 2 * time.Second
	// DefaultMaxPageBytes bounds a metrics page; a longer one is an error.
	DefaultMaxPageBytes = 1 << 20
	// DefaultReportAttempts is how many times a report is sent while the
	// hub is unavailable before the Reader gives up on it for the round.
	DefaultReportAttempts = 3
	// DefaultReportTimeout bounds one call to the hub.
	DefaultReportTimeout = 5 * time.Second
	// parallelReads bounds the pods read at once.
	parallelReads = 16
)

// Option changes a Reader built by New.
type Option func(*Reader)

// WithInterval reads and reports every d.
func WithInterval(d time.Duration) Option { return func(r *Reader) { r.interval = d } }

// WithReportRetries sends a report at most attempts times (1: no retry),
// waiting a backoff from initial to maxWait between tries.
func WithReportRetries(attempts int, initial, maxWait time.Duration) Option {
	return func(r *Reader) {
		r.attempts = max(attempts, 1)
		r.retry = hubclient.Backoff{Initial: initial, Max: maxWait}
	}
}

// Reader reads the load of the ready member 0 pods of inference replicas
// in the workload cluster and reports it to the hub, by service (see the
// package doc). Create it with New and Run it once.
type Reader struct {
	workload *cluster.Cache
	reporter Reporter
	http     *http.Client
	interval time.Duration
	maxBytes int64
	attempts int
	timeout  time.Duration
	retry    hubclient.Backoff

	// held are the services whose load the hub may hold from this agent:
	// when they have no pod left to read, they are reported 0. Run's
	// goroutine alone uses it.
	held map[string]bool
}

// New returns a Reader of the replicas' pods in workload that sends their
// services' load to reporter (the hub client).
func New(workload *cluster.Cache, reporter Reporter, opts ...Option) *Reader {
	r := &Reader{
		workload: workload,
		reporter: reporter,
		http: &http.Client{Timeout: DefaultReadTimeout, Transport: &http.Transport{
			Proxy:                 nil, // pod IPs: never through a proxy
			DialContext:           (&net.Dialer{Timeout: DefaultReadTimeout}).DialContext,
			MaxIdleConnsPerHost:   1,
			IdleConnTimeout:       3 * DefaultInterval,
			ResponseHeaderTimeout: DefaultReadTimeout,
			DisableCompression:    true,
		}},
		interval: DefaultInterval,
		maxBytes: DefaultMaxPageBytes,
		attempts: DefaultReportAttempts,
		timeout:  DefaultReportTimeout,
		retry:    hubclient.Backoff{Initial: 200 * time.Millisecond, Max: 2 * time.Second},
		held:     map[string]bool{},
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Run reads and reports every interval, from the first sync of the
// workload cache until ctx ends.
func (r *Reader) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("serviceload")
	ctx = klog.NewContext(ctx, log)
	select {
	case <-ctx.Done():
		return nil
	case <-r.workload.Synced():
	}
	log.V(2).Info("Reading the load of inference replicas", "interval", r.interval)
	tick := time.NewTicker(r.interval)
	defer tick.Stop()
	for {
		r.round(ctx)
		select {
		case <-ctx.Done():
			if tr, ok := r.http.Transport.(*http.Transport); ok {
				tr.CloseIdleConnections()
			}
			return nil
		case <-tick.C:
		}
	}
}

// target is one pod to read.
type target struct {
	service        string
	namespace, pod string
	url            string
	gauge          string
}

// targets returns the pods to read: the managed local member 0 pods of
// inference replicas with a load metric that run, are Ready and not
// being deleted. A pod with an invalid annotation is counted an error.
func (r *Reader) targets(ctx context.Context) []target {
	pods, err := r.workload.Pods().List(labels.SelectorFromSet(labels.Set{
		v1alpha1.LabelManaged: "true", v1alpha1.LabelMember: "0"}))
	if err != nil { // the cache lister does not fail
		klog.FromContext(ctx).Error(err, "Listing the member pods")
		return nil
	}
	var out []target
	for _, p := range pods {
		service, ann := p.Labels[v1alpha1.LabelInferenceService], p.Annotations[v1alpha1.AnnotationLoadMetric]
		if service == "" || ann == "" || !serving(p) {
			continue
		}
		m, err := ParseMetric(ann)
		if err != nil {
			metricReads.WithLabelValues(resultError).Inc()
			klog.FromContext(ctx).V(2).Info("Cannot read a replica's load", "pod", klog.KObj(p), "service", service, "err", err)
			continue
		}
		out = append(out, target{service: service, namespace: p.Namespace, pod: p.Name, gauge: m.Gauge,
			url: "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(m.Port)) + m.Path})
	}
	return out
}

// serving reports whether pod runs, is Ready, has an IP and is not being
// deleted.
func serving(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// load is a service's load in this round.
type load struct {
	sum  float64
	read int // pods read
}

// round reads every target and reports each service's load.
func (r *Reader) round(ctx context.Context) {
	targets := r.targets(ctx)
	loads := r.readAll(ctx, targets)
	if ctx.Err() != nil {
		return
	}
	present := map[string]bool{}
	for _, t := range targets {
		present[t.service] = true
	}
	services := make([]string, 0, len(loads))
	for s, l := range loads {
		if l.read > 0 {
			services = append(services, s)
		}
	}
	slices.Sort(services)
	for _, s := range services {
		switch r.report(ctx, s, Value(loads[s].sum)) {
		case refused:
			delete(r.held, s)
		case canceled:
			return
		case unavailable:
			r.held[s] = true
			return // the next round sends fresher values
		default:
			r.held[s] = true
		}
	}
	var dropped []string
	for s := range r.held {
		if !present[s] {
			dropped = append(dropped, s)
		}
	}
	slices.Sort(dropped)
	for _, s := range dropped {
		switch r.report(ctx, s, 0) {
		case canceled, unavailable: // sent again next round
			return
		case failed: // sent again next round
		default:
			delete(r.held, s)
		}
	}
}

// readAll reads the targets, a few at a time, and sums their loads by
// service.
func (r *Reader) readAll(ctx context.Context, targets []target) map[string]load {
	loads := map[string]load{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallelReads)
	for _, t := range targets {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			v, err := r.read(ctx, t)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				metricReads.WithLabelValues(resultError).Inc()
				klog.FromContext(ctx).V(2).Info("Cannot read a replica's load", "pod", klog.KRef(t.namespace, t.pod),
					"service", t.service, "url", t.url, "err", err)
				return
			}
			metricReads.WithLabelValues(resultOK).Inc()
			mu.Lock()
			l := loads[t.service]
			l.sum += v
			l.read++
			loads[t.service] = l
			mu.Unlock()
		}()
	}
	wg.Wait()
	return loads
}

// read returns the sum of t's gauge on its page.
func (r *Reader) read(ctx context.Context, t target) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultReadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := r.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", t.url, resp.Status)
	}
	page, err := io.ReadAll(io.LimitReader(resp.Body, r.maxBytes+1))
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", t.url, err)
	}
	if int64(len(page)) > r.maxBytes {
		return 0, fmt.Errorf("GET %s: the page is longer than %d bytes", t.url, r.maxBytes)
	}
	return Sum(bytes.NewReader(page), t.gauge)
}

// outcome is how a report ended.
type outcome int

const (
	sent        outcome = iota
	refused             // for good: the service is gone or has no replica here
	unavailable         // the hub stayed unavailable through the retries
	failed              // another error
	canceled            // ctx ended
)

// report sends service's load to the hub, retrying with backoff while
// the hub is unavailable, at most r.attempts times.
func (r *Reader) report(ctx context.Context, service string, value int64) outcome {
	log := klog.FromContext(ctx).WithValues("service", service, "load", value)
	attempts, err := hubclient.Resend(ctx, r.attempts, r.timeout, r.retry, func(ctx context.Context) error {
		return r.reporter.ReportServiceLoad(ctx, service, value)
	}, func(err error, attempt int, wait time.Duration) {
		log.V(2).Info("Reporting the service's load failed; retrying", "err", err, "attempt", attempt, "after", wait)
	})
	switch {
	case err == nil:
		log.V(4).Info("Reported a service's load to the hub")
		return sent
	case isRefusal(err):
		log.V(2).Info("The hub refused the service's load", "reason", status.Code(err).String(), "err", err)
		return refused
	case ctx.Err() != nil:
		return canceled
	case hubclient.RetryableCall(err):
		log.V(1).Info("The hub is unavailable; the load is reported again next round", "err", err, "attempts", attempts)
		return unavailable
	default:
		log.Error(err, "Could not report the service's load to the hub")
		return failed
	}
}

// isRefusal reports whether the hub refused a report for good: the
// service is gone (NotFound) or has no replica on this cluster
// (PermissionDenied).
func isRefusal(err error) bool {
	switch status.Code(err) {
	case codes.NotFound, codes.PermissionDenied:
		return true
	}
	return false
}
