// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlane is one etcd + kube-apiserver pair started for a test package.
type ControlPlane struct {
	env *envtest.Environment
	dir string
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// KubeletClientCA signed the client certificate the API server presents
	// to kubelets (user KubeletClientUser, in system:masters): its CAFile is
	// what an agent's kubelet endpoints verify (--kubelet-client-ca).
	KubeletClientCA *KubeletClientCA
}

// StartControlPlane starts etcd and kube-apiserver from the binary cache
// (about 4 s). Call it from TestMain and Stop the result when the tests end.
func StartControlPlane() (*ControlPlane, error) {
	if err := CheckBinaries(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "shoal-controlplane")
	if err != nil {
		return nil, err
	}
	ca, args, err := kubeletClientArgs(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: BinDir()}
	for k, v := range args {
		env.ControlPlane.GetAPIServer().Configure().Set(k, v)
	}
	cfg, err := env.Start()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	return &ControlPlane{env: env, dir: dir, Config: cfg, KubeletClientCA: ca}, nil
}

// Stop stops the API server and etcd and removes their data.
func (c *ControlPlane) Stop() error {
	err := c.env.Stop()
	_ = os.RemoveAll(c.dir)
	return err
}
