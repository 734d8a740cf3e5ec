// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"os"
	"runtime"
	"testing"

	"k8s.io/klog/v2"
)

// TestSpareProcsOncePerProcess: two leaders in one process raise the Ps
// once, and the last to end puts them back; a GOMAXPROCS changed by
// someone else meanwhile is left as it is.
func TestSpareProcsOncePerProcess(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set in the environment: spareProcs leaves it alone")
	}
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	a := spareProcs(klog.Background())
	b := spareProcs(klog.Background())
	if got := runtime.GOMAXPROCS(0); got != 2*procs {
		t.Fatalf("two leaders: GOMAXPROCS %d, want %d", got, 2*procs)
	}
	a()
	if got := runtime.GOMAXPROCS(0); got != 2*procs {
		t.Errorf("one leader left: GOMAXPROCS %d, want %d", got, 2*procs)
	}
	b()
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("none left: GOMAXPROCS %d, want %d", got, procs)
	}
	c := spareProcs(klog.Background())
	runtime.GOMAXPROCS(3 * procs) // an operator's choice while leading
	c()
	if got := runtime.GOMAXPROCS(0); got != 3*procs {
		t.Errorf("GOMAXPROCS changed meanwhile: %d after, want it left at %d", got, 3*procs)
	}
}
