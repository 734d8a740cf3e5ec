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
// commit it), one write per job and epoch.
type record struct {
	namespace string
	mu        sync.Mutex       // one writer of the ConfigMap at a time
	written   map[string]int64 // what this run knows the ConfigMap holds
}

func recordKey(job string) string { return strings.Replace(job, "/", ".", 1) }

// load returns the recorded epochs per "<namespace>/<job>".
func (r *record) load(ctx context.Context, c kubernetes.Interface) (map[string]int64, error) {
	cm, err := c.CoreV1().ConfigMaps(r.namespace).Get(ctx, EpochsConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
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
	r.written = map[string]int64{}
	for k, v := range out {
		r.written[k] = v
	}
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
// already; entries older than recordRetention are dropped on the way.
func (r *record) save(ctx context.Context, c kubernetes.Interface, job string, epoch int64, now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written == nil {
		r.written = map[string]int64{}
	}
	if r.written[job] >= epoch {
		return nil
	}
	cms := c.CoreV1().ConfigMaps(r.namespace)
	for range 5 {
		cm, err := cms.Get(ctx, EpochsConfigMap, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: EpochsConfigMap, Namespace: r.namespace}}
			err = nil
		}
		if err != nil {
			return fmt.Errorf("read epoch record: %w", err)
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		for k, v := range cm.Data {
			if _, at, ok := parseEntry(v); !ok || now.Sub(time.Unix(at, 0)) > recordRetention {
				delete(cm.Data, k)
			}
		}
		k := recordKey(job)
		if e, _, ok := parseEntry(cm.Data[k]); ok && e >= epoch {
			r.written[job] = e
			return nil
		}
		cm.Data[k] = fmt.Sprintf("%d %d", epoch, now.Unix())
		if cm.ResourceVersion == "" {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		} else {
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		}
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("write epoch record: %w", err)
		}
		r.written[job] = epoch
		return nil
	}
	return fmt.Errorf("write epoch record %s/%s: kept conflicting", r.namespace, EpochsConfigMap)
}
