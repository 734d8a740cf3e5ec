package dispatch

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// parallelism bounds concurrent hub API calls for one gang.
const parallelism = 32

// prepare is phase one: create the members and wait for every agent's Prepared.
func (d *Dispatcher) prepare(ctx context.Context, w *work, it store.Item[*v1alpha1.Job], disp *metav1.Condition) error {
	now := d.cfg.Clock.Now()
	if disp == nil {
		var err error
		it, err = d.setDispatched(ctx, it, metav1.ConditionUnknown, ReasonPreparing,
			fmt.Sprintf("preparing %d members of epoch %d on %v", len(w.res.Members), w.res.Epoch, w.res.Clusters), nil)
		if err != nil {
			return err
		}
		d.observeStart(it.Name, w.res.Epoch, now)
	} else {
		now = d.cfg.Clock.Now()
	}
	started := now
	if disp != nil {
		started = disp.LastTransitionTime.Time
	}
	if err := d.createMembers(ctx, w, it.Object); err != nil {
		return err
	}
	var prepared int
	for _, p := range w.pods {
		switch st, msg := stateOf(p); st {
		case memberUnprepared, memberFailed:
			return d.abort(ctx, w, it, "PrepareFailed", msg)
		case memberPrepared, memberRunning, memberSucceeded:
			prepared++
		}
	}
	if prepared == len(w.res.Members) {
		msg := fmt.Sprintf("all %d members prepared; committed epoch %d", prepared, w.res.Epoch)
		it, err := d.setDispatched(ctx, it, metav1.ConditionTrue, ReasonCommitted, msg, func(j *v1alpha1.Job) {
			j.Status.Members = memberStatuses(w)
		})
		if err != nil {
			return err
		}
		_ = it
		return d.stamp(ctx, w)
	}
	if d.cfg.Clock.Since(started) > d.cfg.PrepareTimeout {
		return d.abort(ctx, w, it, "PrepareTimeout", fmt.Sprintf("%d of %d members prepared within %s",
			prepared, len(w.res.Members), d.cfg.PrepareTimeout))
	}
	return nil
}

// createMembers creates the missing member pods (and the rendezvous
// Service) and adds them to w.pods.
func (d *Dispatcher) createMembers(ctx context.Context, w *work, j *v1alpha1.Job) error {
	have := map[string]bool{}
	for _, p := range w.pods {
		have[p.Name] = true
	}
	var missing []*corev1.Pod
	for _, m := range w.res.Members {
		if !have[PodName(j.Name, w.res.Epoch, m.Index)] {
			missing = append(missing, d.memberPod(j, w.res, m))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if len(w.res.Clusters) == 1 {
		_, err := d.hub.CoreV1().Services(d.cfg.Namespace).Create(ctx, d.headlessService(j), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create rendezvous service: %w", err)
		}
	}
	created := make([]*corev1.Pod, len(missing))
	err := forEach(len(missing), func(i int) error {
		p, err := d.hub.CoreV1().Pods(d.cfg.Namespace).Create(ctx, missing[i], metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			p, err = d.hub.CoreV1().Pods(d.cfg.Namespace).Get(ctx, missing[i].Name, metav1.GetOptions{})
		}
		created[i] = p
		return err
	})
	for _, p := range created {
		if p != nil {
			w.pods = append(w.pods, p)
		}
	}
	return err
}

// stamp puts the commit annotation on every member that lacks it.
func (d *Dispatcher) stamp(ctx context.Context, w *work) error {
	epoch := strconv.FormatInt(w.res.Epoch, 10)
	var todo []*corev1.Pod
	for _, p := range w.pods {
		if p.Annotations[AnnotationCommit] != epoch && p.DeletionTimestamp == nil {
			todo = append(todo, p)
		}
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationCommit, epoch))
	return forEach(len(todo), func(i int) error {
		_, err := d.hub.CoreV1().Pods(todo[i].Namespace).Patch(ctx, todo[i].Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if isNotFound(err) {
			return nil // a vanished member fails the gang in follow
		}
		return err
	})
}

// forEach runs fn for 0..n-1 with bounded parallelism and joins the errors.
func forEach(n int, fn func(int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, parallelism)
	)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return joinErrs(errs)
}

func isNotFound(err error) bool { return err != nil && apierrors.IsNotFound(err) }
