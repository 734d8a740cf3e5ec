// SPDX-License-Identifier: Apache-2.0

package pause

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestReapCollectsExitedChildren(t *testing.T) {
	var pids []int
	for range 2 {
		p, err := os.StartProcess("/bin/sh", []string{"sh", "-c", "exit 3"}, &os.ProcAttr{})
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, p.Pid)
	}
	for _, pid := range pids {
		waitZombie(t, pid)
	}
	if n := Reap(); n != 2 {
		t.Errorf("Reap collected %d children, want 2", n)
	}
	for _, pid := range pids {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); !errors.Is(err, syscall.ECHILD) {
			t.Errorf("child %d still there after Reap (wait4: %v)", pid, err)
		}
	}
	if n := Reap(); n != 0 {
		t.Errorf("second Reap collected %d, want 0", n)
	}
}

// waitZombie waits until child pid has exited and is waiting to be reaped.
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// pid (comm) state ...
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("child %d did not exit", pid)
}

func TestWaitReapsUntilTerminated(t *testing.T) {
	for _, stop := range []os.Signal{syscall.SIGTERM, syscall.SIGINT} {
		sigs := make(chan os.Signal, 4)
		sigs <- syscall.SIGCHLD
		sigs <- syscall.SIGHUP
		sigs <- syscall.SIGCHLD
		sigs <- stop
		reaped := 0
		if got := Wait(sigs, func() int { reaped++; return 1 }); got != stop {
			t.Errorf("Wait returned %v, want %v", got, stop)
		}
		if reaped != 2 {
			t.Errorf("reaped %d times on two SIGCHLD, want 2", reaped)
		}
	}
}
