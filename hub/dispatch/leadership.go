// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"errors"
	"fmt"

	"github.com/shoal-dev/shoal/hub/store"
)

// ErrDeposed is returned by a write a dispatcher whose leadership is lost
// tried: it made none.
var ErrDeposed = errors.New("dispatch: leadership lost")

// guards are the conditions every store write of this dispatcher carries:
// its leadership's Held guard while Run leads (none when Pass is driven by
// hand), so that a deposed dispatcher that has not noticed yet cannot
// change a job or a reservation, as the scheduler's bookings are guarded.
func (d *Dispatcher) guards() []store.Cond {
	if d.held == nil {
		return nil
	}
	return []store.Cond{*d.held}
}

// setLeadership sets the leadership whose Held guard the writes carry (nil: none).
func (d *Dispatcher) setLeadership(l store.Leadership) {
	if l == nil {
		d.held = nil
		return
	}
	held := l.Held()
	d.held = &held
}

// leading checks, by a transaction guarded by the leadership and writing
// nothing, that it is still held, before writes the store cannot guard:
// member pod creates and commit stamps in the hub cluster. It returns ErrDeposed when it is
// not. A create can still follow a loss that happens between the check and
// it; the new leader deletes such a member (an epoch it does not hold, or
// one it tears down), and the agents refuse a stale epoch.
func (d *Dispatcher) leading(ctx context.Context) error {
	if d.held == nil {
		return nil
	}
	_, err := d.st.Txn(ctx).If(*d.held).Commit()
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("%w: not writing member pods", ErrDeposed)
	}
	return err
}
