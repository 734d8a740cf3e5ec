// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/shoal-dev/shoal/agent/hubclient"
)

func TestKubeletClientChoice(t *testing.T) {
	base := func() Config {
		return Config{Cluster: "eu1", HubAddress: "hub:7443", Local: &rest.Config{Host: "https://x"}}
	}
	c := base()
	if err := c.defaults(); err == nil || !strings.Contains(err.Error(), "--kubelet-client-ca") {
		t.Errorf("neither a client CA nor any client: %v, want an error naming --kubelet-client-ca", err)
	}
	c = base()
	c.KubeletClientCAFile, c.KubeletInsecureAllowAnyClient = "ca.crt", true
	if err := c.defaults(); err == nil {
		t.Error("both a client CA and any client accepted")
	}
	c = base()
	c.KubeletInsecureAllowAnyClient = true
	if err := c.defaults(); err != nil {
		t.Errorf("any client: %v", err)
	}
	// New reads the CA file at once: a file without a certificate stops the agent before it registers.
	bad := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(bad, []byte("placeholder\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c = base()
	c.KubeletClientCAFile = bad
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("placeholder CA file: %v, want no PEM certificate", err)
	}
}

func TestLocalClientInPlaceOfConfig(t *testing.T) {
	c := Config{Cluster: "eu1", HubAddress: "hub:7443", KubeletInsecureAllowAnyClient: true}
	if err := c.defaults(); err == nil {
		t.Error("neither Local nor LocalClient accepted")
	}
	c = Config{Cluster: "eu1", HubAddress: "hub:7443", KubeletInsecureAllowAnyClient: true, LocalClient: fake.NewClientset()}
	if err := c.defaults(); err != nil {
		t.Errorf("LocalClient alone: %v", err)
	}
	a, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.localClient(); err != nil || got != c.LocalClient {
		t.Errorf("localClient = %v, %v; want the LocalClient passed", got, err)
	}
	c.GitOps = func(context.Context, *hubclient.Client, kubernetes.Interface, *rest.Config) error { return nil }
	if err := c.defaults(); err == nil || !strings.Contains(err.Error(), "GitOps") {
		t.Errorf("GitOps with LocalClient only: %v, want an error naming GitOps", err)
	}
}
