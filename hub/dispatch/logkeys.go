// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"

	"k8s.io/klog/v2"
)

// withJob returns ctx with a logger carrying the scope's job and, when it
// holds a reservation, its epoch, so every log line of its reconcile names them.
func withJob(ctx context.Context, s *scope) context.Context {
	log := klog.FromContext(ctx).WithValues("job", s.name)
	if s.res != nil {
		log = log.WithValues("epoch", s.res.Epoch)
	}
	return klog.NewContext(ctx, log)
}
