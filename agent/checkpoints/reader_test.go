// SPDX-License-Identifier: Apache-2.0

package checkpoints

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/agent/cluster/clustertest"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

const ns = "shoal-q-research"

// base is the time of the first log line of every test log.
var base = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// stamp is a log line as the kubelet sends it with timestamps, at base+d.
func stamp(d time.Duration, text string) string {
	return base.Add(d).Format("2006-01-02T15:04:05.000000000Z07:00") + " " + text + "\n"
}

// ckpt is a checkpoint line of step.
func ckpt(step int64) string {
	return fmt.Sprintf(`%s{"step":%d,"uri":"s3://ckpt/train/step-%d"}`, v1alpha1.CheckpointLinePrefix, step, step)
}

// member is a managed local member pod of job "train", running unless
// phase says otherwise.
func member(name, index string, phase corev1.PodPhase) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name),
			Labels:      map[string]string{v1alpha1.LabelJob: "train", v1alpha1.LabelMember: index, v1alpha1.LabelManaged: "true"},
			Annotations: map[string]string{v1alpha1.AnnotationEpoch: "3"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "trainer"}, {Name: "sidecar"}}},
		Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "sidecar", ContainerID: "containerd://s", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: "trainer", ContainerID: "containerd://t", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}},
	}
	if phase != corev1.PodRunning {
		p.Status.ContainerStatuses[1].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}
	}
	return p
}

// opened is one call of the fake LogOpener.
type opened struct {
	pod, container string
	since          *metav1.Time
}

// fakeLogs is a LogOpener serving what serve returns for the n-th open
// (from 0) of a pod's log: its content, and whether the stream then stays
// open (follows) or ends.
type fakeLogs struct {
	serve  func(pod string, n int, since *metav1.Time) (content string, follow bool)
	mu     sync.Mutex
	opens  []opened
	closed map[string]int
}

func (f *fakeLogs) open(_ context.Context, namespace, pod, container string, since *metav1.Time) (io.ReadCloser, error) {
	f.mu.Lock()
	n := 0
	for _, o := range f.opens {
		if o.pod == pod {
			n++
		}
	}
	f.opens = append(f.opens, opened{pod: pod, container: container, since: since})
	f.mu.Unlock()
	if namespace != ns {
		return nil, fmt.Errorf("namespace %q", namespace)
	}
	content, follow := f.serve(pod, n, since)
	if !follow {
		return f.closer(pod, io.NopCloser(strings.NewReader(content))), nil
	}
	pr, pw := io.Pipe()
	go func() { _, _ = pw.Write([]byte(content)) }() // the writer stays open: the log is followed
	return f.closer(pod, pr), nil
}

type closeFunc struct {
	io.Reader
	close func() error
}

func (c closeFunc) Close() error { return c.close() }

func (f *fakeLogs) closer(pod string, rc io.ReadCloser) io.ReadCloser {
	return closeFunc{Reader: rc, close: func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.closed == nil {
			f.closed = map[string]int{}
		}
		f.closed[pod]++
		return rc.Close()
	}}
}

func (f *fakeLogs) openedPods() []opened {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]opened(nil), f.opens...)
}

func (f *fakeLogs) closedCount(pod string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed[pod]
}

// call is one call of the fake Reporter.
type call struct {
	job  string
	step int64
	uri  string
}

// fakeHub is a Reporter answering with answer (nil: OK).
type fakeHub struct {
	answer func(step int64, attempt int) error
	mu     sync.Mutex
	calls  []call
}

func (h *fakeHub) ReportJobCheckpoint(_ context.Context, job string, r v1alpha1.CheckpointReport) error {
	h.mu.Lock()
	attempt := 0
	for _, c := range h.calls {
		if c.step == r.Step {
			attempt++
		}
	}
	h.calls = append(h.calls, call{job: job, step: r.Step, uri: r.URI})
	h.mu.Unlock()
	if h.answer == nil {
		return nil
	}
	return h.answer(r.Step, attempt)
}

func (h *fakeHub) steps() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]int64, 0, len(h.calls))
	for _, c := range h.calls {
		out = append(out, c.step)
	}
	return out
}

// start runs a workload cache of pods and a Reader on it; the returned
// stop ends both and fails the test if the Reader does not return.
func start(t *testing.T, logs *fakeLogs, hub *fakeHub, pods ...*corev1.Pod) (*fake.Clientset, func()) {
	t.Helper()
	return clustertest.Start(t, func(workload *cluster.Cache) func(context.Context) error {
		return New(workload, hub, WithLogOpener(logs.open), WithReportRetries(3, time.Millisecond, 4*time.Millisecond),
			WithReconnectBackoff(time.Millisecond, 4*time.Millisecond), WithDrain(50*time.Millisecond)).Run
	}, pods...)
}

// eventually polls cond until it holds or 5 s passed.
var eventually = clustertest.Eventually

func counts() map[string]float64 {
	out := map[string]float64{}
	for _, r := range []string{resultReported, resultRefused, resultInvalid, resultError} {
		out[r] = testutil.ToFloat64(metricLines.WithLabelValues(r))
	}
	return out
}

// delta is the change of each result's count since before.
func delta(before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for r, v := range counts() {
		if d := v - before[r]; d != 0 {
			out[r] = d
		}
	}
	return out
}

func equalSteps(a, b []int64) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func equalCounts(a, b map[string]float64) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestReportsMemberZeroCheckpoints: the two checkpoint lines of the
// running member 0's first container are reported in order with the job
// of its label; noise is ignored, and no other pod's log is opened.
func TestReportsMemberZeroCheckpoints(t *testing.T) {
	before := counts()
	logs := &fakeLogs{serve: func(pod string, _ int, _ *metav1.Time) (string, bool) {
		if pod != "train-0" {
			return stamp(0, ckpt(999)), true
		}
		return stamp(0, "starting") + stamp(time.Second, ckpt(100)) + stamp(2*time.Second, "loss=0.31 SHOAL_CHECKPOINT") +
			stamp(3*time.Second, ckpt(200)), true
	}}
	hub := &fakeHub{}
	notManaged := member("other-0", "0", corev1.PodRunning)
	delete(notManaged.Labels, v1alpha1.LabelManaged)
	cs, _ := start(t, logs, hub, member("train-1", "1", corev1.PodRunning), notManaged,
		member("done-0", "0", corev1.PodSucceeded), member("train-0", "0", corev1.PodRunning))
	eventually(t, "two reports", func() bool { return len(hub.steps()) >= 2 })
	hub.mu.Lock()
	got := append([]call(nil), hub.calls...)
	hub.mu.Unlock()
	want := []call{{job: "train", step: 100, uri: "s3://ckpt/train/step-100"}, {job: "train", step: 200, uri: "s3://ckpt/train/step-200"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reports %v, want %v", got, want)
	}
	// A member 0 created now is handled after every pod listed before it:
	// once its log is open, the others were passed over for good.
	if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), member("late-0", "0", corev1.PodRunning), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the late member 0 followed", func() bool { return len(logs.openedPods()) >= 2 })
	for _, o := range logs.openedPods() {
		if o.pod != "train-0" && o.pod != "late-0" {
			t.Errorf("opened the log of %s, not a running managed member 0", o.pod)
		}
		if o.container != "trainer" || o.since != nil {
			t.Errorf("opened %+v, want the first container (trainer) from the start", o)
		}
	}
	eventually(t, "the late member's report", func() bool { return len(hub.steps()) == 3 })
	if d := delta(before); !equalCounts(d, map[string]float64{resultReported: 3}) {
		t.Errorf("counted %v, want 3 reported", d)
	}
}

// TestTarget: which pods' logs are followed, and which container.
func TestTarget(t *testing.T) {
	firstWaiting := member("train-0", "0", corev1.PodRunning)
	firstWaiting.Status.ContainerStatuses[1].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}
	noJob := member("train-0", "0", corev1.PodRunning)
	delete(noJob.Labels, v1alpha1.LabelJob)
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"running member 0", member("train-0", "0", corev1.PodRunning), true},
		{"member 1", member("train-1", "1", corev1.PodRunning), false},
		{"pending", member("train-0", "0", corev1.PodPending), false},
		{"succeeded", member("train-0", "0", corev1.PodSucceeded), false},
		{"first container waiting, sidecar running", firstWaiting, false},
		{"no job label", noJob, false},
	} {
		s, id, ok := target(tc.pod)
		if ok != tc.want {
			t.Errorf("%s: followed %v, want %v", tc.name, ok, tc.want)
		}
		if ok && (s.container != "trainer" || s.job != "train" || s.epoch != "3" || id == "") {
			t.Errorf("%s: %+v %q", tc.name, s, id)
		}
	}
	restarted := member("train-0", "0", corev1.PodRunning)
	restarted.Status.ContainerStatuses[1].ContainerID, restarted.Status.ContainerStatuses[1].RestartCount = "containerd://t2", 1
	_, a, _ := target(member("train-0", "0", corev1.PodRunning))
	if _, b, _ := target(restarted); a == b {
		t.Errorf("a restarted container has the same id %q", a)
	}
}

// TestInvalidLines: invalid checkpoint lines (not JSON, unknown field, an
// invalid report, too long) are counted invalid and the lines after them
// are still read; a long line without the prefix is skipped quietly.
func TestInvalidLines(t *testing.T) {
	before := counts()
	long := strings.Repeat("x", MaxLineBytes+10)
	logs := &fakeLogs{serve: func(string, int, *metav1.Time) (string, bool) {
		return stamp(0, v1alpha1.CheckpointLinePrefix+`{"step":1,`) +
			stamp(time.Second, v1alpha1.CheckpointLinePrefix+`{"step":2,"uri":"s3://c/2","epoch":4}`) +
			stamp(2*time.Second, v1alpha1.CheckpointLinePrefix+`{"step":-3,"uri":"s3://c/3"}`) +
			stamp(3*time.Second, v1alpha1.CheckpointLinePrefix+`{"step":4,"uri":"s3://c/`+long+`"}`) +
			stamp(4*time.Second, long) +
			stamp(5*time.Second, ckpt(300)), true
	}}
	hub := &fakeHub{}
	start(t, logs, hub, member("train-0", "0", corev1.PodRunning))
	eventually(t, "the valid line after the invalid ones", func() bool { return len(hub.steps()) == 1 })
	if got := hub.steps(); !equalSteps(got, []int64{300}) {
		t.Errorf("reported steps %v, want [300]", got)
	}
	if d := delta(before); !equalCounts(d, map[string]float64{resultInvalid: 4, resultReported: 1}) {
		t.Errorf("counted %v, want 4 invalid and 1 reported", d)
	}
}

// TestRetries: a refused report (FailedPrecondition: an older step) is
// not retried; one the hub cannot take now (Unavailable) is retried until
// it succeeds, and given up after the attempts allowed.
func TestRetries(t *testing.T) {
	before := counts()
	logs := &fakeLogs{serve: func(string, int, *metav1.Time) (string, bool) {
		return stamp(0, ckpt(100)) + stamp(time.Second, ckpt(200)) + stamp(2*time.Second, ckpt(300)) +
			stamp(3*time.Second, ckpt(400)), true
	}}
	hub := &fakeHub{answer: func(step int64, attempt int) error {
		switch {
		case step == 100:
			return status.Error(codes.FailedPrecondition, "step 100 is older than the latest checkpoint (150)")
		case step == 200 && attempt < 2:
			return status.Error(codes.Unavailable, "hub restarting")
		case step == 300:
			return status.Error(codes.Unavailable, "hub down")
		}
		return nil
	}}
	start(t, logs, hub, member("train-0", "0", corev1.PodRunning))
	eventually(t, "the last report", func() bool { s := hub.steps(); return len(s) > 0 && s[len(s)-1] == 400 })
	// 100 once, 200 twice refused and then taken, 300 three times (the
	// attempts allowed) and given up, then 400.
	if got := hub.steps(); !equalSteps(got, []int64{100, 200, 200, 200, 300, 300, 300, 400}) {
		t.Errorf("calls %v", got)
	}
	if d := delta(before); !equalCounts(d, map[string]float64{resultRefused: 1, resultReported: 2, resultError: 1}) {
		t.Errorf("counted %v, want 1 refused, 2 reported, 1 error", d)
	}
}

// TestReconnect: when the stream ends while the container runs, the log is
// opened again since the last line read, and the lines of that second
// read before (two with the very same timestamp among them) are not
// reported again.
func TestReconnect(t *testing.T) {
	full := []struct {
		at   time.Duration
		text string
	}{
		{100 * time.Millisecond, ckpt(100)},
		{200 * time.Millisecond, "noise"},
		{200 * time.Millisecond, ckpt(200)},
		{1500 * time.Millisecond, ckpt(300)},
	}
	logs := &fakeLogs{serve: func(_ string, n int, since *metav1.Time) (string, bool) {
		var b strings.Builder
		for i, l := range full {
			if n == 0 && i == 3 {
				return b.String() + "2026-12-02T10:00:01.5000", false // the stream breaks inside a line
			}
			// The kubelet's SinceTime has whole seconds.
			if since == nil || !base.Add(l.at).Before(since.Truncate(time.Second)) {
				b.WriteString(stamp(l.at, l.text))
			}
		}
		return b.String(), true
	}}
	hub := &fakeHub{}
	start(t, logs, hub, member("train-0", "0", corev1.PodRunning))
	eventually(t, "the report after the reconnect", func() bool { return len(hub.steps()) >= 3 })
	if got := hub.steps(); !equalSteps(got, []int64{100, 200, 300}) {
		t.Errorf("reported %v, want [100 200 300] once each", got)
	}
	o := logs.openedPods()
	if len(o) != 2 || o[0].since != nil || o[1].since == nil || !o[1].since.Time.Equal(base.Add(200*time.Millisecond)) {
		t.Errorf("opens %+v, want one from the start and one since the last line read", o)
	}
}

// TestStopsFollowing: a member 0 that stops running, or is deleted, is no
// longer read; the Reader ends its followers when its context ends.
func TestStopsFollowing(t *testing.T) {
	logs := &fakeLogs{serve: func(string, int, *metav1.Time) (string, bool) { return stamp(0, ckpt(100)), true }}
	hub := &fakeHub{}
	cs, stop := start(t, logs, hub, member("train-0", "0", corev1.PodRunning), member("gone-0", "0", corev1.PodRunning),
		member("last-0", "0", corev1.PodRunning))
	eventually(t, "three logs read", func() bool { return len(hub.steps()) == 3 })
	if _, err := cs.CoreV1().Pods(ns).Update(t.Context(), member("train-0", "0", corev1.PodFailed), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods(ns).Delete(t.Context(), "gone-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stopped and the deleted pod's logs closed", func() bool {
		return logs.closedCount("train-0") > 0 && logs.closedCount("gone-0") > 0
	})
	stop()
	if logs.closedCount("last-0") == 0 {
		t.Error("the running member's log is still open after the Reader ended")
	}
	if n := len(logs.openedPods()); n != 3 {
		t.Errorf("%d opens, want 3 (no reconnect of a log that was followed to the end)", n)
	}
}

// TestReadsTheLastLinesAfterTheContainerStopped: a checkpoint printed just
// before the container ended, arriving after the pod already shows it
// stopped, is still reported (the drain); with no drain it is lost.
func TestReadsTheLastLinesAfterTheContainerStopped(t *testing.T) {
	for _, tc := range []struct {
		drain time.Duration
		want  []int64
	}{{drain: time.Second, want: []int64{100, 200}}, {drain: 0, want: []int64{100}}} {
		t.Run(fmt.Sprintf("drain %s", tc.drain), func(t *testing.T) {
			cs := fake.NewClientset()
			if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), member("train-0", "0", corev1.PodRunning), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			workload, err := cluster.New(cs)
			if err != nil {
				t.Fatal(err)
			}
			stopped := make(chan struct{})
			opens := 0
			open := func(ctx context.Context, _, _, _ string, _ *metav1.Time) (io.ReadCloser, error) {
				opens++
				pr, pw := io.Pipe()
				if opens > 1 { // a reopened log has nothing new
					_ = pw.Close()
					return pr, nil
				}
				go func() {
					_, _ = pw.Write([]byte(stamp(0, ckpt(100))))
					<-stopped // the kubelet reports the container stopped first
					time.Sleep(50 * time.Millisecond)
					_, _ = pw.Write([]byte(stamp(time.Second, ckpt(200))))
					_ = pw.Close()
				}()
				return pr, nil
			}
			hub := &fakeHub{}
			r := New(workload, hub, WithLogOpener(open), WithReportRetries(1, time.Millisecond, time.Millisecond),
				WithReconnectBackoff(time.Millisecond, 4*time.Millisecond), WithDrain(tc.drain))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() { _ = workload.Run(ctx) }()
			readerDone := make(chan struct{})
			go func() { _ = r.Run(ctx); close(readerDone) }()
			eventually(t, "the first checkpoint", func() bool { return len(hub.steps()) == 1 })
			if _, err := cs.CoreV1().Pods(ns).Update(t.Context(), member("train-0", "0", corev1.PodSucceeded), metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // the Reader sees the stop before the last line comes
			close(stopped)
			time.Sleep(300 * time.Millisecond)
			if got := hub.steps(); !slices.Equal(got, tc.want) {
				t.Errorf("reported %v, want %v", got, tc.want)
			}
			cancel()
			<-readerDone
		})
	}
}
