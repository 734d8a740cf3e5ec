// SPDX-License-Identifier: Apache-2.0

// Package fleet_test checks the local GPU fleet end to end: real etcd,
// kube-apiserver, kube-scheduler and kwok processes started by test/framework.
package fleet_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/framework"
)

// env is the fleet shared by the package's tests: a hub and two workload
// clusters (hgx-h100, a100-mig) with the profiles' default node counts.
var env *framework.Fleet

func TestMain(m *testing.M) {
	opts := devfleet.Options{Clusters: 2, Profiles: []string{"hgx-h100", "a100-mig"}}
	code := framework.RunWithFleet(m, opts, func(f *framework.Fleet) { env = f })
	if shoalBins != nil {
		_ = os.RemoveAll(filepath.Dir(shoalBins.HubBinary))
	}
	os.Exit(code)
}

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Kubernetes processes")
	}
}
