// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Up starts a fleet as opts describe and returns once every cluster serves
// and every fake GPU node is Ready. On failure it stops whatever it started
// and keeps the logs; the error says where they are.
func Up(ctx context.Context, opts Options) (*Fleet, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if err := CheckBinaries(opts.BinDir, opts.StagesDir); err != nil {
		return nil, err
	}
	if err := opts.Shoal.check(); err != nil {
		return nil, err
	}
	if err := opts.RealNodes.check(opts.BinDir); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(opts.BinDir, "kube-controller-manager")); err != nil {
		return nil, fmt.Errorf("%w [kube-controller-manager] in %s: run `make k8s-bin`", ErrMissingBinaries, opts.BinDir)
	}
	if err := clearStale(opts); err != nil {
		return nil, err
	}
	f := &Fleet{opts: opts, State: State{Dir: opts.Dir, StartedAt: time.Now().UTC()}}
	f.sims, f.stopSims = context.WithCancel(context.WithoutCancel(ctx))
	if err := f.plan(); err != nil {
		return nil, err
	}
	if err := f.planRealNodes(); err != nil {
		f.teardownRealNodes()
		return nil, err
	}
	f.planSteps()
	if err := f.prepare(); err != nil {
		f.teardownRealNodes()
		return nil, err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(f.Clusters))
	for i, c := range f.Clusters {
		wg.Go(func() { errs[i] = c.start(ctx, f) })
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err == nil && opts.Shoal != nil && !opts.NoHub {
		err = f.startShoal(ctx)
	}
	if err != nil {
		_ = f.Stop()
		return nil, fmt.Errorf("start fleet: %w\n(logs kept in %s)", err, f.Dir)
	}
	f.progress("fleet up in %s: %d clusters, kubeconfig %s", time.Since(f.StartedAt).Round(100*time.Millisecond),
		len(f.Clusters), f.Kubeconfig)
	return f, nil
}

// clearStale refuses a directory with a live fleet and removes what a dead
// one left behind (only the fleet's own files).
func clearStale(opts Options) error {
	old, err := Open(opts.Dir)
	if errors.Is(err, ErrNoFleet) {
		return nil
	}
	if err == nil {
		if n := old.Alive(); n > 0 {
			return &RunningError{Dir: opts.Dir, Alive: n}
		}
	}
	if err == nil {
		old.teardownRealNodes()
	}
	for _, p := range []string{stateFile, "pki", "clusters", "kubeconfig", "kwok-stages", "images", "run", shoalConfigFile, gitopsDir} {
		if err := os.RemoveAll(filepath.Join(opts.Dir, p)); err != nil {
			return err
		}
	}
	return nil
}

// plan names the clusters and picks their ports.
func (f *Fleet) plan() error {
	o := f.opts
	var names []string
	if !o.NoHub {
		names = append(names, "hub")
	}
	for i := range o.Clusters {
		p, _ := LookupProfile(o.Profiles[i%len(o.Profiles)])
		names = append(names, p.Short+"-"+strconv.Itoa(i+1))
	}
	for i, name := range names {
		c := &Cluster{Name: name, Role: RoleHub, Dir: filepath.Join(o.Dir, "clusters", name)}
		if name != "hub" {
			j := i
			if !o.NoHub {
				j--
			}
			p, _ := LookupProfile(o.Profiles[j%len(o.Profiles)])
			c.Role, c.Profile, c.Region, c.Nodes, c.NativeGang = RoleWorkload, p.Name, o.Region, o.Nodes, o.NativeGang
			if c.Nodes == 0 {
				c.Nodes = p.DefaultNodes
			}
		}
		if o.BasePort > 0 {
			c.Ports = layoutPorts(o.BasePort, i)
		} else {
			ports, err := freePorts()
			if err != nil {
				return err
			}
			c.Ports = ports
		}
		if c.Role == RoleHub {
			c.Ports.Scheduler, c.Ports.Kwok = 0, 0
		}
		if c.Role == RoleWorkload || !o.ControllerManager && !hubRunsNodeLifecycle(c, o) {
			// A workload cluster's kube-controller-manager serves no port
			// (one fewer port to race for); its service-account controller
			// says it runs.
			c.Ports.ControllerManager = 0
		}
		if o.Shoal == nil || o.NoHub {
			c.Ports.Shoal, c.Ports.ShoalHTTP = 0, 0
		}
		if o.Shoal == nil || c.Role != RoleHub {
			c.Ports.ShoalREST = 0
		}
		if err := checkPorts(c); err != nil {
			return err
		}
		c.Server = fmt.Sprintf("https://127.0.0.1:%d", c.Ports.APIServer)
		c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
		f.Clusters = append(f.Clusters, c)
	}
	return nil
}

// prepare writes the PKI, the kubeconfigs and the first state file.
func (f *Fleet) prepare() error {
	if err := writePKI(f.pki()); err != nil {
		return err
	}
	stages, err := writeStages(f.opts.StagesDir, filepath.Join(f.Dir, "kwok-stages"), f.opts.PodStartDelays)
	if err != nil {
		return err
	}
	f.stages = stages
	if f.opts.real() {
		if f.images, err = writeImages(f.opts.RealNodes, filepath.Join(f.Dir, "images")); err != nil {
			return err
		}
	}
	for _, c := range f.Clusters {
		if err := os.MkdirAll(c.Dir, 0o755); err != nil {
			return err
		}
		if err := writeKubeconfig(c.Kubeconfig, f.pki(), c); err != nil {
			return err
		}
	}
	f.Kubeconfig = filepath.Join(f.Dir, "kubeconfig")
	if err := writeKubeconfig(f.Kubeconfig, f.pki(), f.Clusters...); err != nil {
		return err
	}
	return f.save()
}
