// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"
	"time"

	"k8s.io/klog/v2"
)

// Report is one generation-numbered inventory report.
type Report struct {
	Generation int64
	JSON       []byte
}

// RunReports sends the latest report from reports until ctx ends. A report
// that fails is retried with backoff and jitter, and replaced by a newer one
// if that arrives meanwhile: the hub only needs the latest.
func (c *Client) RunReports(ctx context.Context, reports <-chan Report) error {
	log := klog.FromContext(ctx).WithName("inventory-report")
	bo := Backoff{Initial: 200 * time.Millisecond, Max: 30 * time.Second}
	var pending *Report
	for {
		if pending == nil {
			select {
			case <-ctx.Done():
				return nil
			case r := <-reports:
				pending = &r
			}
		}
		callCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
		_, err := c.ReportInventory(callCtx, pending.Generation, pending.JSON)
		cancel()
		metricReports.WithLabelValues(result(err)).Inc()
		if err == nil {
			log.V(2).Info("Reported inventory", "generation", pending.Generation, "bytes", len(pending.JSON))
			pending = nil
			bo.Reset()
			continue
		}
		log.Error(err, "Inventory report failed; retrying", "generation", pending.Generation)
		t := time.NewTimer(bo.Next())
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case r := <-reports:
			pending = &r
		case <-t.C:
		}
		t.Stop()
	}
}
