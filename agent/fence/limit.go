// SPDX-License-Identifier: Apache-2.0

package fence

import (
	"context"
	"time"

	"k8s.io/klog/v2"
)

// Limit takes the hub's fence timeout (its --cluster-fence-timeout, sent
// at registration and in every heartbeat reply; 0: not told). The hub
// counts a silent cluster Lost, and runs its gangs elsewhere, after its own
// timeout plus its margin, so the agent must stop its members before: when
// its own timeout is longer than the hub's, it fences by the hub's from
// now on, and says so once per change at error level (the flag is
// misconfigured). It reports whether the hub's value differs from the one
// told before, for the caller to persist it (the agent keeps it with its
// credentials, so that an agent restarted inside a cut fences by it too).
func (f *Fence) Limit(ctx context.Context, hub time.Duration) (changed bool) {
	if hub <= 0 {
		return false
	}
	f.mu.Lock()
	changed = hub != f.hub
	f.hub = hub
	before := f.timeout
	f.timeout = min(f.configured, hub)
	after := f.timeout
	f.mu.Unlock()
	if changed && f.configured > hub {
		klog.FromContext(ctx).Error(nil, "The agent's --fence-timeout exceeds the hub's --cluster-fence-timeout: fencing by the hub's",
			"fenceTimeout", f.configured, "hubFenceTimeout", hub)
		metricClamped.Set(1)
	} else if changed {
		metricClamped.Set(0)
	}
	if before != after {
		klog.FromContext(ctx).Info("Fence timeout in force changed", "from", before, "to", after)
	}
	return changed
}

// HubTimeout is the hub's fence timeout last told (0: none yet).
func (f *Fence) HubTimeout() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hub
}
