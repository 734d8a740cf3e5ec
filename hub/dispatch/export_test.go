// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"encoding/json"
	"k8s.io/apimachinery/pkg/labels"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/hub/store"
)

// CachedPods returns the job-labelled pods in the dispatcher's cache (the
// members and any others it ignores), each as its Fingerprint by name, for
// tests that wait for the cache to catch up. It returns nil until the cache
// has its first list.
func CachedPods(d *Dispatcher) (map[string]string, error) {
	if !d.pods.informer.HasSynced() {
		return nil, nil
	}
	pods, err := d.pods.lister.List(labels.Everything())
	out := map[string]string{}
	for _, p := range pods {
		out[p.Name] = Fingerprint(p)
	}
	return out, err
}

// Fingerprint is what a pass reads of a pod: its resource version (when the
// API server sets one), metadata and status.
func Fingerprint(p *corev1.Pod) string {
	b, _ := json.Marshal([]any{p.ResourceVersion, p.Labels, p.Annotations, p.DeletionTimestamp, p.Status})
	return string(b)
}

// NotifyDrains is notifyDrains, for its unit test.
var NotifyDrains = notifyDrains

// CachedServiceIn reports whether the dispatcher's cache holds the Service
// namespace/name.
func CachedServiceIn(d *Dispatcher, namespace, name string) bool {
	_, err := d.pods.services.services.Services(namespace).Get(name)
	return err == nil
}

// CachedService says whether the dispatcher's rendezvous cache holds the
// Service name, in any cluster namespace.
func CachedService(d *Dispatcher, name string) bool {
	l, err := d.pods.services.services.List(labels.Everything())
	if err != nil {
		return false
	}
	for _, s := range l {
		if s.Name == name {
			return true
		}
	}
	return false
}

// Wake is the earliest deadline d's last pass found pending (zero: none).
func Wake(d *Dispatcher) time.Time { return d.wake }

// Lead makes d's writes carry l's Held guard, as Run does while it leads.
func Lead(d *Dispatcher, l store.Leadership) { d.setLeadership(l) }
