// SPDX-License-Identifier: Apache-2.0

package fleet_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/shoal-dev/shoal/internal/devfleet"
)

// TestDownStopsEverything starts a second, small fleet the way `shoal dev up`
// does, then stops it the way `shoal dev down` does (from the state file
// alone) and checks that none of its processes runs and its ports are free.
func TestDownStopsEverything(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	opts := devfleet.Options{Dir: dir, Clusters: 1, Profiles: []string{"gb200-nvl72"}, Nodes: 18, Out: testWriter{t}, DieWithParent: true}
	f, err := devfleet.Up(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	procs := f.Processes()
	t.Cleanup(func() { _ = f.Stop() })
	if len(procs) != 7 { // hub: etcd, kube-apiserver; workload: + kube-controller-manager, kube-scheduler, kwok
		t.Fatalf("fleet has %d processes, want 7", len(procs))
	}

	var re *devfleet.RunningError
	if _, err := devfleet.Up(t.Context(), opts); !errors.As(err, &re) {
		t.Fatalf("second Up in the same directory: %v, want RunningError", err)
	}

	loaded, err := devfleet.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := loaded.Down(); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if running(p.Pid) {
			t.Errorf("%s (pid %d) still running after Down", p.Name, p.Pid)
		}
	}
	for _, c := range f.Clusters {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(c.Ports.APIServer))
		if err != nil {
			t.Errorf("%s: kube-apiserver port %d still taken after Down: %v", c.Name, c.Ports.APIServer, err)
			continue
		}
		_ = l.Close()
	}
	for _, gone := range []string{"state.json", "kubeconfig", "pki", "clusters/*/*.pid", "clusters/*/kubeconfig", "clusters/*/etcd-data"} {
		if m, _ := filepath.Glob(filepath.Join(dir, gone)); len(m) > 0 {
			t.Errorf("Down left %v", m)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "clusters/*/kube-apiserver.log")); len(m) != 2 {
		t.Errorf("Down removed the logs: kube-apiserver logs %v", m)
	}
}

func TestUpRefusesTakenPort(t *testing.T) {
	skipShort(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = devfleet.Up(t.Context(), devfleet.Options{Dir: t.TempDir(), BasePort: port, Clusters: 1})
	var pe *devfleet.PortInUseError
	if !errors.As(err, &pe) || pe.Port != port {
		t.Fatalf("Up with port %d taken: %v, want PortInUseError", port, err)
	}
}

// running reports whether pid exists and is not a zombie, independently of
// the fleet's own bookkeeping.
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := len(b) - 1
	for i > 0 && b[i] != ')' {
		i--
	}
	return i+2 < len(b) && b[i+2] != 'Z'
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}
