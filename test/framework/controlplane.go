// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlane is one etcd + kube-apiserver pair started for a test package.
type ControlPlane struct {
	env *envtest.Environment
	// Config reaches the API server as an administrator.
	Config *rest.Config
}

// StartControlPlane starts etcd and kube-apiserver from the binary cache
// (about 4 s). Call it from TestMain and Stop the result when the tests end.
func StartControlPlane() (*ControlPlane, error) {
	if err := CheckBinaries(); err != nil {
		return nil, err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: BinDir()}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	return &ControlPlane{env: env, Config: cfg}, nil
}

// Stop stops the API server and etcd and removes their data.
func (c *ControlPlane) Stop() error { return c.env.Stop() }
