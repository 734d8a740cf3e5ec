// SPDX-License-Identifier: Apache-2.0

package rollout

import "github.com/shoal-dev/shoal/hub/store"

// LeadWith has TickAll's writes carry l's Held guard, as lead does.
func (c *Controller) LeadWith(l store.Leadership) {
	held := l.Held()
	c.held = &held
}
