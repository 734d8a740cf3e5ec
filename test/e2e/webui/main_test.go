// SPDX-License-Identifier: Apache-2.0

// Package webui_test drives the hub's web fleet view (hub/webui) in headless
// Chromium against a running fleet: real shoal-hub and shoal-agent
// processes on the demo's three KWOK clusters (hgx-h100, gb200-nvl72,
// a100-mig), the browser reaching the hub's REST listener through
// `shoal ui`. Each page is checked against the REST API and saved as a
// screenshot (-screenshots DIR; `make screenshots` writes docs/images).
package webui_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/framework"
)

var (
	env *framework.Fleet
	// bins holds shoal-hub, shoal-agent and shoal, built for the package.
	bins string
	// chromium is the browser's path, "" when it is not installed.
	chromium    string
	screenshots = flag.String("screenshots", "", "directory to write the pages' screenshots to (default: a temporary one, logged)")
)

// Profiles of the demo fleet, one workload cluster each.
var demoProfiles = []string{"hgx-h100", "gb200-nvl72", "a100-mig"}

func TestMain(m *testing.M) {
	flag.Parse()
	chromium = findChromium()
	if testing.Short() || chromium == "" {
		os.Exit(m.Run()) // the tests skip themselves
	}
	var err error
	if bins, err = os.MkdirTemp("", "shoal-webui-bin-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer func() { _ = os.RemoveAll(bins) }()
		build := exec.Command("go", "build", "-o", bins+"/", "./cmd/shoal-hub", "./cmd/shoal-agent", "./cmd/shoal")
		build.Dir = filepath.Join("..", "..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
			return 1
		}
		opts := devfleet.Options{Clusters: len(demoProfiles), Profiles: demoProfiles,
			Shoal: &devfleet.ShoalOptions{HubBinary: filepath.Join(bins, "shoal-hub"), AgentBinary: filepath.Join(bins, "shoal-agent")}}
		return framework.RunWithFleet(m, opts, func(f *framework.Fleet) { env = f })
	}()
	os.Exit(code)
}

// findChromium is $SHOAL_CHROMIUM or chromium on PATH (Debian's package).
func findChromium() string {
	if p := os.Getenv("SHOAL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func skipUnlessFleet(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Kubernetes processes and a browser")
	}
	if chromium == "" {
		t.Skip("chromium is not installed: run `make host-deps` (Debian packages chromium and chromium-driver) or set SHOAL_CHROMIUM")
	}
}
