// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func startSleep(t *testing.T, dir string) *Process {
	t.Helper()
	p, err := startProcess("sleep", "/bin/sleep", []string{"60"}, nil, filepath.Join(dir, "sleep.log"), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(time.Second) })
	return p
}

func TestProcessStop(t *testing.T) {
	p := startSleep(t, t.TempDir())
	if !p.Alive() || p.StartTime == 0 {
		t.Fatalf("started process not alive (start time %d)", p.StartTime)
	}
	// A record of the same pid with another start time is a different process.
	other := &Process{Name: "other", Pid: p.Pid, StartTime: p.StartTime + 1}
	if other.Alive() {
		t.Error("a reused pid with another start time counts as alive")
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Alive() {
		t.Error("process alive after Stop")
	}
}

func TestUpRefusesRunningFleet(t *testing.T) {
	dir := t.TempDir()
	p := startSleep(t, dir)
	// A process loaded from the state file has no done channel, as in another shoal process.
	rec := *p
	rec.done = nil
	st := State{Dir: dir, Clusters: []*Cluster{{Name: "hub", Role: RoleHub, Processes: []*Process{&rec}}}}
	b, _ := json.Marshal(st)
	if err := os.WriteFile(filepath.Join(dir, stateFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	err := clearStale(Options{Dir: dir})
	var re *RunningError
	if !errors.As(err, &re) || re.Alive != 1 {
		t.Fatalf("clearStale on a live fleet: %v, want RunningError with 1 alive", err)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := clearStale(Options{Dir: dir}); err != nil {
		t.Fatalf("clearStale on a dead fleet: %v", err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrNoFleet) {
		t.Errorf("Open after clearing a dead fleet: %v, want ErrNoFleet", err)
	}
}

func TestCheckPorts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	taken := l.Addr().(*net.TCPAddr).Port
	free, err := freePorts()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		ports Ports
		want  int
	}{
		{"free", free, 0},
		{"apiserver taken", Ports{APIServer: taken, EtcdClient: free.EtcdClient}, taken},
		{"etcd taken", Ports{APIServer: free.APIServer, EtcdClient: taken}, taken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkPorts(&Cluster{Name: "c", Ports: tt.ports})
			var pe *PortInUseError
			switch {
			case tt.want == 0 && err != nil:
				t.Errorf("unexpected error %v", err)
			case tt.want != 0 && (!errors.As(err, &pe) || pe.Port != tt.want):
				t.Errorf("got %v, want PortInUseError for port %d", err, tt.want)
			}
		})
	}
}

func TestCheckBinaries(t *testing.T) {
	err := CheckBinaries(t.TempDir(), "")
	if !errors.Is(err, ErrMissingBinaries) {
		t.Fatalf("CheckBinaries on an empty dir: %v, want ErrMissingBinaries", err)
	}
}
