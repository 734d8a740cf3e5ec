// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"testing"

	"k8s.io/client-go/kubernetes"
)

func TestStartControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	cp, err := StartControlPlane()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	}()
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != "v1.37.2" {
		t.Errorf("server version %s, want v1.37.2", v.GitVersion)
	}
}
