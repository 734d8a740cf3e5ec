// SPDX-License-Identifier: Apache-2.0

// Package gitops_test runs agent/gitops against fluxcd's gittestserver and a
// real kube-apiserver (etcd + kube-apiserver from the binary cache).
package gitops_test

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"testing"

	"github.com/fluxcd/pkg/gittestserver"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shoal-dev/shoal/test/framework"
)

var (
	cfg     *rest.Config
	k8s     client.Client
	gitSrv  *gittestserver.GitServer
	skipAll string // why every test skips (short mode)
)

func TestMain(m *testing.M) {
	klog.InitFlags(nil)
	flag.Parse()
	log.SetOutput(io.Discard) // gittestserver logs every request with the standard logger
	ctrllog.SetLogger(klog.NewKlogr())
	if testing.Short() {
		skipAll = "integration test: needs a kube-apiserver (run without -short)"
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	cp, err := framework.StartControlPlane()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	cfg = cp.Config
	if k8s, err = client.New(cfg, client.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
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
	return m.Run()
}

// integration skips t in short mode.
func integration(t testing.TB) {
	t.Helper()
	if skipAll != "" {
		t.Skip(skipAll)
	}
}
