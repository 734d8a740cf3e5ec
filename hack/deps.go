// SPDX-License-Identifier: Apache-2.0

//go:build tools

// Package hack pins the project's direct dependencies before every package
// that uses them exists, so `go mod tidy` keeps them at the versions in
// ../shared/design/dependencies.md.
package hack

import (
	_ "github.com/fluxcd/pkg/git/gogit"
	_ "github.com/fluxcd/pkg/gittestserver"
	_ "github.com/fluxcd/pkg/kustomize"
	_ "github.com/fluxcd/pkg/ssa"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/etcd/client/v3/concurrency"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "google.golang.org/grpc"
	_ "google.golang.org/protobuf/proto"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/client-go/kubernetes"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "sigs.k8s.io/yaml"
)
