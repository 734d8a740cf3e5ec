// SPDX-License-Identifier: Apache-2.0

package serviceload

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/agent/cluster/clustertest"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

const ns = "shoal-q-serving"

// pages serves, at each path, a metrics page with the gauge
// shoal_requests_in_flight of the given value (split over two series).
func pages(t *testing.T, values map[string]float64) (port string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		v, ok := values[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = fmt.Fprintf(w, "# HELP shoal_requests_in_flight Requests in flight.\n# TYPE shoal_requests_in_flight gauge\n"+
			"shoal_requests_in_flight{route=\"a\"} %v\nshoal_requests_in_flight{route=\"b\"} 0\nother 99\n", v)
	}))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// replicaPod is a managed local member pod of a replica of service,
// running and Ready at 127.0.0.1, its load at port and path.
func replicaPod(name, service, member, port, path string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{v1alpha1.LabelManaged: "true", v1alpha1.LabelMember: member,
				v1alpha1.LabelJob: service + "-" + name, v1alpha1.LabelInferenceService: service},
			Annotations: map[string]string{v1alpha1.AnnotationLoadMetric: port + path + "#shoal_requests_in_flight"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// report is one call of the fake Reporter.
type report struct {
	service string
	value   int64
}

// fakeHub is a Reporter answering with answer (nil: OK).
type fakeHub struct {
	answer func(service string) error
	mu     sync.Mutex
	calls  []report
}

func (h *fakeHub) ReportServiceLoad(_ context.Context, service string, value int64) error {
	h.mu.Lock()
	h.calls = append(h.calls, report{service, value})
	h.mu.Unlock()
	if h.answer == nil {
		return nil
	}
	return h.answer(service)
}

// of returns the values reported for service, in order.
func (h *fakeHub) of(service string) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int64
	for _, c := range h.calls {
		if c.service == service {
			out = append(out, c.value)
		}
	}
	return out
}

// start runs a workload cache of pods and a Reader on it reading every
// 10 ms; it returns the fake cluster's client.
func start(t *testing.T, hub *fakeHub, pods ...*corev1.Pod) *fake.Clientset {
	t.Helper()
	cs, _ := clustertest.Start(t, func(workload *cluster.Cache) func(context.Context) error {
		return New(workload, hub, WithInterval(10*time.Millisecond), WithReportRetries(3, time.Millisecond, 4*time.Millisecond)).Run
	}, pods...)
	return cs
}

// eventually polls cond until it holds or 5 s passed.
var eventually = clustertest.Eventually

func reads() (ok, failed float64) {
	return testutil.ToFloat64(metricReads.WithLabelValues(resultOK)), testutil.ToFloat64(metricReads.WithLabelValues(resultError))
}

// TestReportsEachServicesLoad: the ready member 0 pods of two replicas of
// chat are summed (2.5 + 1.2, rounded up to 4); member 1, an unready pod,
// a pending one, a pod being deleted, an unmanaged one and one without
// the annotation are not read; a pod whose page fails counts as nothing;
// a service whose only pod fails is not reported. Once chat's pods are
// gone it is reported 0, once.
func TestReportsEachServicesLoad(t *testing.T) {
	port := pages(t, map[string]float64{"/a": 2.5, "/b": 1.2, "/m1": 100, "/unready": 1000, "/pending": 1000,
		"/deleting": 1000, "/unmanaged": 1000, "/embed": 0})
	unready := replicaPod("unready", "chat", "0", port, "/unready")
	unready.Status.Conditions[0].Status = corev1.ConditionFalse
	pending := replicaPod("pending", "chat", "0", port, "/pending")
	pending.Status.Phase = corev1.PodPending
	deleting := replicaPod("deleting", "chat", "0", port, "/deleting")
	deleting.DeletionTimestamp, deleting.Finalizers = &metav1.Time{Time: time.Now()}, []string{"test/keep"}
	unmanaged := replicaPod("unmanaged", "chat", "0", port, "/unmanaged")
	unmanaged.Labels[v1alpha1.LabelManaged] = "false"
	noMetric := replicaPod("no-metric", "chat", "0", port, "/m1")
	delete(noMetric.Annotations, v1alpha1.AnnotationLoadMetric)
	okBefore, errBefore := reads()
	hub := &fakeHub{}
	cs := start(t, hub,
		replicaPod("chat-a-0", "chat", "0", port, "/a"), replicaPod("chat-a-1", "chat", "1", port, "/m1"),
		replicaPod("chat-b-0", "chat", "0", port, "/b"), replicaPod("chat-c-0", "chat", "0", port, "/missing"),
		unready, pending, deleting, unmanaged, noMetric,
		replicaPod("embed-0", "embed", "0", port, "/embed"),
		replicaPod("broken-0", "broken", "0", port, "/missing"))
	eventually(t, "three reports of chat", func() bool { return len(hub.of("chat")) >= 3 })
	for _, v := range hub.of("chat") {
		if v != 4 {
			t.Fatalf("chat reported %v, want 4 every time (2.5 + 1.2 rounded up)", hub.of("chat"))
		}
	}
	if got := hub.of("embed"); len(got) == 0 || slices.ContainsFunc(got, func(v int64) bool { return v != 0 }) {
		t.Errorf("embed reported %v, want 0s", got)
	}
	if got := hub.of("broken"); len(got) != 0 {
		t.Errorf("broken, whose only pod fails, reported %v; want nothing", got)
	}
	okNow, errNow := reads()
	if okNow-okBefore < 9 || errNow-errBefore < 6 { // three rounds: 3 pods read, 2 failed
		t.Errorf("reads ok +%v error +%v, want at least +9 and +6", okNow-okBefore, errNow-errBefore)
	}

	for _, name := range []string{"chat-a-0", "chat-a-1", "chat-b-0", "chat-c-0", "unready", "pending", "unmanaged", "no-metric"} {
		if err := cs.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "chat reported 0", func() bool { got := hub.of("chat"); return got[len(got)-1] == 0 })
	n := len(hub.of("embed"))
	eventually(t, "three more rounds", func() bool { return len(hub.of("embed")) >= n+3 })
	got := hub.of("chat")
	// A round may see chat-b-0 alone while the deletions reach the cache: 2.
	if i := slices.Index(got, 0); i != len(got)-1 || slices.ContainsFunc(got[:i], func(v int64) bool { return v != 4 && v != 2 }) {
		t.Errorf("chat reported %v, want 4s then a single 0", got)
	}
}

// TestRefusalsAreNotRetried: a service the hub refuses (PermissionDenied:
// its replica moved) is sent once a round, never retried, and not
// reported 0 when its pod goes; a report the hub answers Unavailable is
// retried.
func TestRefusalsAreNotRetried(t *testing.T) {
	port := pages(t, map[string]float64{"/moved": 3, "/flaky": 2})
	var mu sync.Mutex
	flaky := 0
	hub := &fakeHub{answer: func(service string) error {
		switch service {
		case "moved":
			return status.Error(codes.PermissionDenied, "inference service \"moved\" has no replica on cluster eu1")
		case "flaky":
			mu.Lock()
			defer mu.Unlock()
			if flaky++; flaky%2 == 1 {
				return status.Error(codes.Unavailable, "hub restarting")
			}
		}
		return nil
	}}
	cs := start(t, hub, replicaPod("moved-0", "moved", "0", port, "/moved"), replicaPod("flaky-0", "flaky", "0", port, "/flaky"))
	eventually(t, "three rounds", func() bool { return len(hub.of("flaky")) >= 6 })
	if err := cs.CoreV1().Pods(ns).Delete(t.Context(), "moved-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // rounds without moved-0
	n := len(hub.of("flaky"))
	eventually(t, "three more rounds", func() bool { return len(hub.of("flaky")) >= n+6 })
	moved, flakyGot := hub.of("moved"), hub.of("flaky")
	if slices.Contains(moved, 0) || len(moved) == 0 || len(moved) > len(flakyGot)/2+1 {
		t.Errorf("moved reported %v over %d rounds, want 3s once a round and no 0", moved, len(flakyGot)/2)
	}
	for i := 0; i+1 < len(flakyGot); i += 2 {
		if flakyGot[i] != 2 || flakyGot[i+1] != 2 {
			t.Fatalf("flaky reported %v, want 2 sent twice a round", flakyGot)
		}
	}
}
