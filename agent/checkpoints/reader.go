// SPDX-License-Identifier: Apache-2.0

package checkpoints

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/agent/hubclient"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Reporter passes a checkpoint of a job on to the hub; *hubclient.Client
// is one. Its errors carry the hub's gRPC status.
type Reporter interface {
	ReportJobCheckpoint(ctx context.Context, job string, r v1alpha1.CheckpointReport) error
}

// LogOpener opens the log of a pod's container, followed (it ends when
// the container stops or the connection drops), each line prefixed with
// the kubelet's RFC 3339 timestamp and a space (PodLogOptions.Timestamps),
// from since on (nil: the whole log). Closing the stream, or ending ctx,
// ends the reads.
type LogOpener func(ctx context.Context, namespace, pod, container string, since *metav1.Time) (io.ReadCloser, error)

// StreamLogs is the LogOpener that reads the log through the API server of
// the cluster client reaches (pods/log).
func StreamLogs(client kubernetes.Interface) LogOpener {
	return func(ctx context.Context, namespace, pod, container string, since *metav1.Time) (io.ReadCloser, error) {
		return client.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{
			Container: container, Follow: true, Timestamps: true, SinceTime: since}).Stream(ctx)
	}
}

// Defaults of a Reader (see the Options).
const (
	// DefaultReportAttempts is how many times a report is sent while the
	// hub is unavailable before the Reader gives up on it.
	DefaultReportAttempts = 6
	// DefaultReportTimeout bounds one call to the hub.
	DefaultReportTimeout = 15 * time.Second
	// DefaultDrain is how long a follower keeps reading after its
	// container stopped running (the pod still exists), for the lines
	// printed just before the end.
	DefaultDrain = 10 * time.Second
)

// Option changes a Reader built by New.
type Option func(*Reader)

// WithLogOpener reads the logs with open instead of StreamLogs (tests).
func WithLogOpener(open LogOpener) Option { return func(r *Reader) { r.open = open } }

// WithReportRetries sends a report at most attempts times (1: no retry),
// waiting a backoff from initial to maxWait between tries.
func WithReportRetries(attempts int, initial, maxWait time.Duration) Option {
	return func(r *Reader) {
		r.attempts = max(attempts, 1)
		r.retry = hubclient.Backoff{Initial: initial, Max: maxWait}
	}
}

// WithDrain keeps a follower reading for d after its container stopped
// running (0: it stops at once).
func WithDrain(d time.Duration) Option { return func(r *Reader) { r.drain = d } }

// WithReconnectBackoff waits a backoff from initial to maxWait before opening
// a log again after its stream ended while the container still runs (reset
// by a stream that brought a new line).
func WithReconnectBackoff(initial, maxWait time.Duration) Option {
	return func(r *Reader) { r.reconnect = hubclient.Backoff{Initial: initial, Max: maxWait} }
}

// Reader follows the logs of the running member 0 pods of the workload
// cluster and reports their checkpoint lines to the hub (see the package
// doc). Create it with New and Run it once.
type Reader struct {
	workload  *cluster.Cache
	reporter  Reporter
	open      LogOpener
	attempts  int
	timeout   time.Duration
	retry     hubclient.Backoff
	reconnect hubclient.Backoff
	drain     time.Duration

	mu sync.Mutex
	// following holds the follower of each pod followed, by namespace/name.
	following map[string]*follower
	stopped   bool
	wg        sync.WaitGroup
}

// follower is the goroutine following one container of one pod.
type follower struct {
	// id names the container instance followed (pod UID, container ID
	// and restart count): a new one is followed afresh.
	id     string
	cancel context.CancelFunc
	done   chan struct{}
	// stopping is closed when the container stopped running: the follower
	// then ends at the end of its log instead of reopening it.
	stopping chan struct{}
}

// New returns a Reader of the member 0 pods in workload that sends their
// checkpoints to reporter (the hub client).
func New(workload *cluster.Cache, reporter Reporter, opts ...Option) *Reader {
	r := &Reader{
		workload:  workload,
		reporter:  reporter,
		open:      StreamLogs(workload.Client()),
		attempts:  DefaultReportAttempts,
		timeout:   DefaultReportTimeout,
		retry:     hubclient.Backoff{Initial: 500 * time.Millisecond, Max: 15 * time.Second},
		reconnect: hubclient.Backoff{Initial: time.Second, Max: 30 * time.Second},
		drain:     DefaultDrain,
		following: map[string]*follower{},
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Run follows the logs of the running member 0 pods until ctx ends, then
// stops every follower and returns.
func (r *Reader) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("checkpoints")
	ctx = klog.NewContext(ctx, log)
	reg, err := r.workload.AddPodHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.update(ctx, o) },
		UpdateFunc: func(_, o any) { r.update(ctx, o) },
		DeleteFunc: r.remove,
	})
	if err != nil {
		return err
	}
	if r.workload.WaitForCacheSync(ctx, reg) {
		log.V(2).Info("Reading checkpoint lines from the logs of member 0 pods")
	}
	<-ctx.Done()
	r.mu.Lock()
	r.stopped = true
	for _, f := range r.following {
		f.cancel()
	}
	clear(r.following)
	r.mu.Unlock()
	r.wg.Wait()
	return nil
}

// stream is the log one follower reads.
type stream struct {
	namespace, pod, container string
	job, epoch                string
}

// target returns the log to follow of pod and the ID of its container
// instance; ok is false unless pod is a managed local member 0 of a job
// whose first container runs.
func target(pod *corev1.Pod) (s stream, id string, ok bool) {
	l := pod.Labels
	if l[v1alpha1.LabelManaged] != "true" || l[v1alpha1.LabelMember] != "0" || l[v1alpha1.LabelJob] == "" {
		return s, "", false
	}
	if pod.Status.Phase != corev1.PodRunning || len(pod.Spec.Containers) == 0 {
		return s, "", false
	}
	c := pod.Spec.Containers[0].Name
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == c && cs.State.Running != nil {
			return stream{namespace: pod.Namespace, pod: pod.Name, container: c, job: l[v1alpha1.LabelJob],
					epoch: pod.Annotations[v1alpha1.AnnotationEpoch]},
				fmt.Sprintf("%s/%s/%d", pod.UID, cs.ContainerID, cs.RestartCount), true
		}
	}
	return s, "", false
}

// update starts following pod's log when it is a running member 0 not
// followed yet (or with a new container), and stops following it
// otherwise: after the drain time when its container stopped, so that the
// lines it printed last are read. A new follower of a pod starts once the
// previous one ended, so that one pod's reports keep their order.
func (r *Reader) update(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(pod)
	if err != nil {
		return
	}
	s, id, follow := target(pod)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	cur := r.following[key]
	if cur != nil && follow && cur.id == id {
		return
	}
	var prev <-chan struct{}
	if cur != nil {
		if follow || r.drain <= 0 {
			cur.cancel()
		} else {
			// The container stopped: its last lines (a checkpoint saved on
			// SIGTERM just before it exited) may still be on their way. The
			// follower reads its log to the end, for at most the drain.
			close(cur.stopping)
			time.AfterFunc(r.drain, cur.cancel)
		}
		prev = cur.done
		delete(r.following, key)
	}
	if !follow {
		return
	}
	fctx, cancel := context.WithCancel(ctx)
	f := &follower{id: id, cancel: cancel, done: make(chan struct{}), stopping: make(chan struct{})}
	r.following[key] = f
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(f.done)
		if prev != nil {
			select {
			case <-prev:
			case <-fctx.Done():
				return
			}
		}
		r.follow(fctx, s, f.stopping)
	}()
}

// remove stops following a deleted pod.
func (r *Reader) remove(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if f := r.following[key]; f != nil {
		f.cancel()
		delete(r.following, key)
	}
}
