// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// State is what the state file records about a fleet.
type State struct {
	// Dir is the fleet directory; StartedAt when Up began.
	Dir       string    `json:"dir"`
	StartedAt time.Time `json:"startedAt"`
	// Kubeconfig has one context per cluster, named after it.
	Kubeconfig string `json:"kubeconfig"`
	// Clusters, the hub (when there is one) first.
	Clusters []*Cluster `json:"clusters"`
	// Shoal is the running shoal-hub, when Up started one.
	Shoal *HubState `json:"shoal,omitempty"`
}

// Fleet is a running (or stopped) local fleet.
type Fleet struct {
	State
	opts   Options
	stages []string   // KWOK stage files written for this fleet
	images []string   // image archives every real node imports
	mu     sync.Mutex // guards Clusters[*].Processes, output and steps
	steps  steps
	saveMu sync.Mutex // serialises writes of the state file
	// sims is the lifetime of the driver simulators' controllers
	// (computedomain.go), which run in this process until Stop.
	sims     context.Context
	stopSims context.CancelFunc
}

// ErrNoFleet is returned by Open when the directory holds no fleet.
var ErrNoFleet = errors.New("no fleet")

// RunningError is returned by Up when the directory already has a live fleet.
type RunningError struct {
	Dir   string
	Alive int
}

func (e *RunningError) Error() string {
	return fmt.Sprintf("a fleet is already running in %s (%d processes alive): stop it with `shoal dev down` first", e.Dir, e.Alive)
}

const stateFile = "state.json"

// Open loads the fleet recorded in dir ("" for DefaultDir()).
func Open(dir string) (*Fleet, error) {
	if dir == "" {
		dir = DefaultDir()
	}
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNoFleet, dir)
	}
	if err != nil {
		return nil, err
	}
	f := &Fleet{opts: Options{Dir: dir}}
	if err := json.Unmarshal(b, &f.State); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, stateFile), err)
	}
	return f, nil
}

// Hub returns the hub management cluster, or nil.
func (f *Fleet) Hub() *Cluster { return f.Cluster("hub") }

// Cluster returns the named cluster, or nil.
func (f *Fleet) Cluster(name string) *Cluster {
	for _, c := range f.Clusters {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Workloads returns the workload clusters in order.
func (f *Fleet) Workloads() []*Cluster {
	var out []*Cluster
	for _, c := range f.Clusters {
		if c.Role == RoleWorkload {
			out = append(out, c)
		}
	}
	return out
}

// Processes returns every recorded process of the fleet.
func (f *Fleet) Processes() []*Process {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*Process
	for _, c := range f.Clusters {
		out = append(out, c.Processes...)
	}
	return out
}

// Alive counts the fleet's processes that are still running.
func (f *Fleet) Alive() int {
	n := 0
	for _, p := range f.Processes() {
		if p.Alive() {
			n++
		}
	}
	return n
}

// RSS is the resident memory of all the fleet's processes, in bytes.
func (f *Fleet) RSS() int64 {
	var n int64
	for _, p := range f.Processes() {
		n += p.RSS()
	}
	return n
}

// Stop stops every recorded process and leaves the files (state, data,
// logs) in place: first the agents, then the hub, then the clusters' own
// components, newest first in each cluster.
func (f *Fleet) Stop() error {
	if f.stopSims != nil {
		f.stopSims()
	}
	agents := f.stopPhase(func(p *Process) bool { return p.Name == AgentProcess })
	hub := f.stopPhase(func(p *Process) bool { return p.Name == HubProcess })
	f.killRealNodeWorkloads()
	rest := f.stopPhase(func(*Process) bool { return true })
	f.teardownRealNodes()
	return errors.Join(agents, hub, rest)
}

// stopPhase stops, in parallel over the clusters, the processes that match.
func (f *Fleet) stopPhase(match func(*Process) bool) error {
	var wg sync.WaitGroup
	errs := make([]error, len(f.Clusters))
	for i, c := range f.Clusters {
		wg.Go(func() {
			f.mu.Lock()
			procs := append([]*Process(nil), c.Processes...)
			f.mu.Unlock()
			for j := len(procs) - 1; j >= 0; j-- {
				if match(procs[j]) {
					errs[i] = errors.Join(errs[i], procs[j].Stop(10*time.Second))
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Down stops the fleet and removes everything it wrote except the logs:
// state, etcd data, credentials, kubeconfigs and pid files.
func (f *Fleet) Down() error {
	if err := f.Stop(); err != nil {
		return err
	}
	for _, c := range f.Clusters {
		entries, _ := os.ReadDir(c.Dir)
		for _, e := range entries {
			if filepath.Ext(e.Name()) != ".log" {
				_ = os.RemoveAll(filepath.Join(c.Dir, e.Name()))
			}
		}
	}
	for _, p := range []string{f.pki(), f.Kubeconfig, filepath.Join(f.Dir, "kwok-stages"), filepath.Join(f.Dir, "run"),
		filepath.Join(f.Dir, "images"), filepath.Join(f.Dir, shoalConfigFile)} {
		if p != "" {
			_ = os.RemoveAll(p)
		}
	}
	return os.Remove(filepath.Join(f.Dir, stateFile))
}

func (f *Fleet) pki() string { return filepath.Join(f.Dir, "pki") }

// record adds a started process to its cluster and saves the state file.
func (f *Fleet) record(c *Cluster, p *Process) {
	f.mu.Lock()
	c.Processes = append(c.Processes, p)
	f.mu.Unlock()
	if err := f.save(); err != nil {
		f.progress("warning: cannot save fleet state: %v", err)
	}
}

func (f *Fleet) save() error {
	f.saveMu.Lock()
	defer f.saveMu.Unlock()
	f.mu.Lock()
	b, err := json.MarshalIndent(&f.State, "", "  ")
	f.mu.Unlock()
	if err != nil {
		return err
	}
	tmp := filepath.Join(f.Dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(f.Dir, stateFile))
}

func (f *Fleet) progress(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.opts.Out == nil {
		return
	}
	fmt.Fprintf(f.opts.Out, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}
