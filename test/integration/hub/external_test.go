// SPDX-License-Identifier: Apache-2.0

package hub

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/test/framework"
	"github.com/shoal-dev/shoal/test/integration/store/etcdcluster"
)

// TestExternalEtcd runs the hub on a 3-member etcd cluster over mutual TLS
// (--etcd-ca/--etcd-cert/--etcd-key), stops one member mid-run and checks
// that the API keeps serving reads and writes, then restarts the hub.
func TestExternalEtcd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	etcd, err := etcdcluster.Start(ctx, filepath.Join(framework.BinDir(), "etcd"), t.TempDir(), 3, etcdcluster.Options{TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Stop)
	h := startHub(t, "--etcd-endpoints", strings.Join(etcd.Endpoints(), ","),
		"--etcd-ca", etcd.Certs.CAFile, "--etcd-cert", etcd.Certs.ClientCertFile, "--etcd-key", etcd.Certs.ClientKeyFile,
		"--etcd-prefix", "/shoal-it/")

	t.Run("transport security", func(t *testing.T) { testTransportSecurity(t, h) })
	var a *agent
	t.Run("registration", func(t *testing.T) { a = testRegistration(t, h, "") })
	if a == nil {
		t.FailNow()
	}
	a.redial(t, h)

	// Stop the member the hub most likely talks to first; the others keep quorum.
	if err := etcd.Members[0].Stop(); err != nil {
		t.Fatal(err)
	}
	t.Run("one member down: heartbeats", func(t *testing.T) {
		if err := a.heartbeat(testCtx(t)); err != nil {
			t.Fatalf("heartbeat with a member down: %v", err)
		}
	})
	t.Run("one member down: concurrent registrations", func(t *testing.T) { testConcurrentRegistrations(t, h, "x") })
	t.Run("one member down: remove revokes", func(t *testing.T) { testRemoveRevokes(t, h, "x") })
	t.Run("one member down: list", func(t *testing.T) {
		resp, err := h.admin(t).ListClusters(testCtx(t), &shoalv1.ListClustersRequest{})
		if err != nil || len(resp.Items) != 4 { // a, and 3 of the 8 racers
			t.Fatalf("ListClusters with a member down: %d items, %v; want 4", len(resp.GetItems()), err)
		}
	})
	t.Run("one member down: restart keeps state", func(t *testing.T) { testRestartKeepsState(t, h, a) })
	t.Run("one member down: readyz", func(t *testing.T) {
		if !h.ready() {
			t.Fatal("/readyz fails with two of three members up")
		}
	})
}
