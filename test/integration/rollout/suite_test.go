// SPDX-License-Identifier: Apache-2.0

// Package rollout_test runs a fleet rollout end to end with real parts: two
// workload clusters (etcd + kube-apiserver each, from the binary cache), an
// agent/gitops Syncer per cluster syncing from fluxcd's gittestserver, and
// the hub's GitOps fleet and rollout controller on an embedded etcd store.
// The agent↔hub exchange is the agent's (report status, take the source the
// hub answers) called in process instead of over gRPC.
package rollout_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/framework"
)

// The Git server requires these credentials; only the workload clusters'
// Secrets hold them.
const (
	gitUser     = "fleet-bot"
	gitPassword = "s3cret-rollout-token"
)

var (
	clusters = map[string]*rest.Config{} // eu1, us1
	gitSrv   *gittestserver.GitServer
	hubStore *store.Store
	skipAll  string
)

func TestMain(m *testing.M) {
	klog.InitFlags(nil)
	flag.Parse()
	log.SetOutput(io.Discard) // gittestserver logs every request
	ctrllog.SetLogger(klog.NewKlogr())
	if testing.Short() {
		skipAll = "integration test: needs kube-apiservers (run without -short)"
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	for _, name := range []string{"eu1", "us1"} {
		cp, err := framework.StartControlPlane()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() { _ = cp.Stop() }()
		clusters[name] = cp.Config
	}
	var err error
	if gitSrv, err = gittestserver.NewTempGitServer(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(gitSrv.Root()) }()
	gitSrv.Auth(gitUser, gitPassword)
	if err := gitSrv.StartHTTP(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer gitSrv.StopHTTP()
	dir, err := os.MkdirTemp("", "shoal-rollout-hub-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if hubStore, err = store.Open(ctx, store.Config{DataDir: dir + "/etcd", Embedded: store.EmbeddedConfig{UnsafeNoFsync: true}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = hubStore.Close() }()
	return m.Run()
}
