// SPDX-License-Identifier: Apache-2.0

// Package upgrade_test upgrades a running fleet from the previous release:
// shoal-hub and shoal-agent built at PreviousRelease run jobs on KWOK
// clusters, then the hub and the agents are replaced, one at a time, by the
// binaries of this checkout on the same data directory (docs/upgrades.md).
package upgrade_test

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if currentBins != nil {
		_ = os.RemoveAll(filepath.Dir(currentBins.HubBinary))
	}
	os.Exit(code)
}

// PreviousRelease is the commit whose hub and agents the test upgrades
// from: the last release on main, before stored records carried a version
// and before member pods moved into per-cluster namespaces
// (docs/upgrades.md: drain running jobs first).
const PreviousRelease = "2aa61ddaff0b4c8ce4f177ad7f94bf6da58abc38"

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Kubernetes processes and builds the previous release")
	}
}

// testWriter sends the fleet's progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(b[:len(b)-min(1, len(b))]))
	return len(b), nil
}
