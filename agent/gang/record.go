// SPDX-License-Identifier: Apache-2.0

package gang

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// EpochsConfigMap is the ConfigMap, in the agent's namespace, that records
// the newest epoch of every job (WithRecord). A key is "<namespace>.<job>"
// (namespaces hold no dot), a value "<epoch> <unix seconds written>".
const EpochsConfigMap = "shoal-agent-epochs"

// recordRetention is how long an entry is kept after it was last written.
// A stale epoch reaches an agent only while a cut to the hub lasts, which the
// fence bounds far below this; local pods of a job carry its epoch anyway.
const recordRetention = 7 * 24 * time.Hour

// record is the durable copy of Gate.epochs. Entries are written before a
// member of a newer epoch is reported Prepared (so before the hub can
// commit it), one write per job and epoch. Saves asked for while a write
// is in flight are written together by the next one (group commit, by a
// goroutine once the save that wrote before returned), from
// the copy of the ConfigMap the last write returned (read again only after
// a conflict): with many small gangs preparing at once, one read and one
// write of the whole ConfigMap per gang, one after another, had every
// prepare worker of the agent wait in line for them.
type record struct {
	namespace string
	mu        sync.Mutex       // guards the fields below
	written   map[string]int64 // what this run knows the ConfigMap holds
	// next collects the entries asked for while writing is set; cm is the
	// ConfigMap as last read or written (nil: read it).
	next    *recordBatch
	writing bool
	cm      *corev1.ConfigMap
}

// recordBatch is entries written together and the outcome of that write
// (err, once done is closed).
type recordBatch struct {
	entries map[string]int64
	now     time.Time // when its last entry was asked for
	done    chan struct{}
	err     error
}

// recordWriteTimeout bounds one group write: it is not tied to the context
// of the save that happens to carry it out, whose end would fail the
// others' saves with it.
const recordWriteTimeout = 30 * time.Second

func recordKey(job string) string { return strings.Replace(job, "/", ".", 1) }

// load returns the recorded epochs per "<namespace>/<job>".
func (r *record) load(ctx context.Context, c kubernetes.Interface) (map[string]int64, error) {
	cm, err := c.CoreV1().ConfigMaps(r.namespace).Get(ctx, EpochsConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.written = map[string]int64{}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read epoch record %s/%s: %w", r.namespace, EpochsConfigMap, err)
	}
	out := map[string]int64{}
	for k, v := range cm.Data {
		if e, _, ok := parseEntry(v); ok {
			out[strings.Replace(k, ".", "/", 1)] = e
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.written = map[string]int64{}
	for k, v := range out {
		r.written[k] = v
	}
	r.cm = cm
	return out, nil
}

func parseEntry(v string) (epoch, at int64, ok bool) {
	f := strings.Fields(v)
	if len(f) != 2 {
		return 0, 0, false
	}
	e, err1 := strconv.ParseInt(f[0], 10, 64)
	t, err2 := strconv.ParseInt(f[1], 10, 64)
	return e, t, err1 == nil && err2 == nil
}

// save records epoch for job unless the ConfigMap holds it or a newer one
// already; entries older than recordRetention are dropped on the way. It
// returns once a write holding the entry succeeded (or failed: its error).
func (r *record) save(ctx context.Context, c kubernetes.Interface, job string, epoch int64, now time.Time) error {
	r.mu.Lock()
	if r.written == nil {
		r.written = map[string]int64{}
	}
	if r.written[job] >= epoch {
		r.mu.Unlock()
		return nil
	}
	if r.next == nil {
		r.next = &recordBatch{entries: map[string]int64{}, done: make(chan struct{})}
	}
	b := r.next
	b.entries[job] = max(b.entries[job], epoch)
	b.now = now
	if r.writing { // the write in flight is followed by this batch's
		r.mu.Unlock()
		select {
		case <-b.done:
			return b.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// This save writes its batch; the batches collected meanwhile are
	// written after it, by a goroutine of their own, so that this save
	// returns as soon as its entry is stored however many follow.
	r.writing = true
	r.next = nil
	r.mu.Unlock()
	wctx := context.WithoutCancel(ctx)
	r.write(wctx, c, b)
	r.mu.Lock()
	if r.next == nil {
		r.writing = false
	} else {
		go r.writeRest(wctx, c)
	}
	r.mu.Unlock()
	return b.err
}

// writeRest writes the batches collected while a write was in flight, one
// after the other, until none is left.
func (r *record) writeRest(ctx context.Context, c kubernetes.Interface) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.next != nil {
		b := r.next
		r.next = nil
		r.mu.Unlock()
		r.write(ctx, c, b)
		r.mu.Lock()
	}
	r.writing = false
}

// write writes one batch (r.writing is held by the caller) and ends it.
func (r *record) write(ctx context.Context, c kubernetes.Interface, b *recordBatch) {
	r.mu.Lock()
	cm := r.cm
	r.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, recordWriteTimeout)
	cm, err := writeRecord(wctx, c, r.namespace, cm, b.entries, b.now)
	cancel()
	r.mu.Lock()
	r.cm = cm // nil after a failure: read it again
	if err == nil {
		for j, e := range b.entries {
			r.written[j] = max(r.written[j], e)
		}
	}
	b.err = err
	close(b.done)
	r.mu.Unlock()
}

// writeRecord writes entries into the ConfigMap, starting from cm (nil:
// read it), and returns it as written. Entries the ConfigMap holds at an
// equal or newer epoch are left as they are.
func writeRecord(ctx context.Context, c kubernetes.Interface, namespace string, cm *corev1.ConfigMap,
	entries map[string]int64, now time.Time) (*corev1.ConfigMap, error) {
	cms := c.CoreV1().ConfigMaps(namespace)
	for range 5 {
		stored := cm != nil // a copy the API returned: updated, not created
		if cm == nil {
			var err error
			cm, err = cms.Get(ctx, EpochsConfigMap, metav1.GetOptions{})
			stored = err == nil
			if apierrors.IsNotFound(err) {
				cm, err = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: EpochsConfigMap, Namespace: namespace}}, nil
			}
			if err != nil {
				return nil, fmt.Errorf("read epoch record: %w", err)
			}
		}
		cm = cm.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		for k, v := range cm.Data {
			if _, at, ok := parseEntry(v); !ok || now.Sub(time.Unix(at, 0)) > recordRetention {
				delete(cm.Data, k)
			}
		}
		changed := false
		for job, epoch := range entries {
			k := recordKey(job)
			if e, _, ok := parseEntry(cm.Data[k]); ok && e >= epoch {
				continue
			}
			cm.Data[k] = fmt.Sprintf("%d %d", epoch, now.Unix())
			changed = true
		}
		if !changed && stored {
			return cm, nil
		}
		var out *corev1.ConfigMap
		var err error
		if !stored {
			out, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		} else {
			out, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		}
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) {
			cm = nil // changed or removed meanwhile: read it again
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("write epoch record: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("write epoch record %s/%s: kept conflicting", namespace, EpochsConfigMap)
}
