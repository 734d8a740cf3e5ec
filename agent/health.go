// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// health tracks whether the workload cluster's API server answers /readyz.
type health struct {
	client kubernetes.Interface
	mu     sync.Mutex
	ok     bool
	msg    string
}

func (h *health) get() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ok, h.msg
}

func (h *health) check(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := h.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	if (err == nil) != h.ok {
		klog.FromContext(ctx).Info("Workload cluster reachability changed", "reachable", err == nil, "err", err)
	}
	h.ok, h.msg = err == nil, ""
	if err != nil {
		h.msg = err.Error()
		if len(h.msg) > 200 {
			h.msg = h.msg[:200] + "…"
		}
	}
}

// run checks every interval until ctx ends.
func (h *health) run(ctx context.Context, interval time.Duration) error {
	for {
		h.check(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}
