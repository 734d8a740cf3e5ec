// SPDX-License-Identifier: Apache-2.0

package pki

import "time"

// SetNow sets the clock ca reads (tests of the rotation's overlap end).
func SetNow(ca *CA, now func() time.Time) { ca.now = now }
