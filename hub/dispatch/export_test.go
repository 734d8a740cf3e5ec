// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// CachedPods returns the member pods in the dispatcher's cache, each as its
// Fingerprint by name, for tests that wait for the cache to catch up.
// It returns nil until the cache has its first list.
func CachedPods(d *Dispatcher) (map[string]string, error) {
	if !d.pods.informer.HasSynced() {
		return nil, nil
	}
	byJob, err := d.pods.byJob()
	out := map[string]string{}
	for _, ps := range byJob {
		for _, p := range ps {
			out[p.Name] = Fingerprint(p)
		}
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

// CachedService says whether the dispatcher's rendezvous cache holds the
// Service name.
func CachedService(d *Dispatcher, name string) bool {
	_, err := d.pods.services.services.Get(name)
	return err == nil
}

// Wake is the earliest deadline d's last pass found pending (zero: none).
func Wake(d *Dispatcher) time.Time { return d.wake }
