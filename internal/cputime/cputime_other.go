// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package cputime

import "time"

// Thread is the CPU time the calling OS thread has used, and whether the
// platform gives it: not on this platform.
func Thread() (time.Duration, bool) { return 0, false }

// RunDelay is the time the calling OS thread has waited for a core, and
// whether the platform gives it: not on this platform.
func RunDelay() (time.Duration, bool) { return 0, false }
