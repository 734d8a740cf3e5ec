// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/internal/devfleet"
)

// Fleet is a local fleet started for one test package, in its own temporary
// directory on free ports.
type Fleet struct {
	*devfleet.Fleet
}

// StartFleet starts a fleet as opts describe (Dir and BasePort are chosen
// here: a fresh temporary directory and free ports), whose processes die with
// the test binary even when it is killed. Progress goes to stderr under -v.
func StartFleet(ctx context.Context, opts devfleet.Options) (*Fleet, error) {
	dir, err := os.MkdirTemp("", "shoal-fleet-")
	if err != nil {
		return nil, err
	}
	opts.Dir, opts.BasePort, opts.DieWithParent = dir, 0, true
	if opts.Out == nil && testing.Verbose() {
		opts.Out = os.Stderr
	}
	f, err := devfleet.Up(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Fleet{Fleet: f}, nil
}

// Stop stops every process of the fleet. With keep (a failed run, or
// SHOAL_KEEP_FLEET set) the directory with the logs stays and its path is
// printed; otherwise it is removed.
func (f *Fleet) Stop(keep bool) error {
	err := f.Fleet.Stop()
	if keep || os.Getenv("SHOAL_KEEP_FLEET") != "" {
		fmt.Fprintf(os.Stderr, "fleet logs kept in %s\n", f.Dir)
		return err
	}
	if rmErr := os.RemoveAll(f.Dir); err == nil {
		err = rmErr
	}
	return err
}

// RunWithFleet is the body of a TestMain: under -short it only runs the tests
// (which skip themselves); otherwise it starts a fleet, hands it to set, runs
// the tests and stops the fleet, keeping its logs when a test failed.
//
//	func TestMain(m *testing.M) {
//		os.Exit(framework.RunWithFleet(m, devfleet.Options{NoHub: true, Profiles: []string{"hgx-h100"}}, func(f *framework.Fleet) { env = f }))
//	}
func RunWithFleet(m *testing.M, opts devfleet.Options, set func(*Fleet)) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	return runWithFleet(m, opts, func(f *Fleet) error { set(f); return nil })
}

// RunWithShoalFleet is RunWithFleet for a fleet run by the shipped shoal-hub
// and shoal-agent: it builds them and the other commands cmds (e.g.
// "shoal") into a temporary directory bins, starts the fleet with
// opts.Shoal running those binaries, and calls set before the tests (a
// failing set fails the run).
func RunWithShoalFleet(m *testing.M, opts devfleet.Options, cmds []string, set func(f *Fleet, bins string) error) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	bins, err := BuildPrograms(append([]string{"shoal-hub", "shoal-agent"}, cmds...)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(bins) }()
	if opts.Shoal == nil {
		opts.Shoal = &devfleet.ShoalOptions{}
	}
	opts.Shoal.HubBinary, opts.Shoal.AgentBinary = filepath.Join(bins, "shoal-hub"), filepath.Join(bins, "shoal-agent")
	return runWithFleet(m, opts, func(f *Fleet) error { return set(f, bins) })
}

func runWithFleet(m *testing.M, opts devfleet.Options, set func(*Fleet) error) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	f, err := StartFleet(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start fleet: %v\n", err)
		return 1
	}
	code := 1
	if err := set(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	if err := f.Stop(code != 0); err != nil {
		fmt.Fprintf(os.Stderr, "stop fleet: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
