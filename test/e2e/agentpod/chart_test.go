// SPDX-License-Identifier: Apache-2.0

package agentpod

import (
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shoal-dev/shoal/internal/charts"
)

// renderAgent renders the agent chart's Deployment with the required values and extra.
func renderAgent(t *testing.T, extra map[string]any) (*appsv1.Deployment, error) {
	t.Helper()
	values := map[string]any{
		"hub":     map[string]any{"address": "hub.example:7443"},
		"cluster": map[string]any{"name": "eu1"},
		"join":    map[string]any{"token": "abcdef.0123456789abcdef", "caHash": "sha256:" + strings.Repeat("0", 64)},
		"kubelet": map[string]any{"clientCA": "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"},
	}
	for k, v := range extra {
		values[k] = v
	}
	objs, err := charts.Render(filepath.Join(repoRoot(), "deploy", "charts", "shoal-agent"),
		charts.Release{Name: "shoal-agent", Namespace: "shoal-system", Values: values})
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
				t.Fatal(err)
			}
			return &d, nil
		}
	}
	t.Fatal("the agent chart renders no Deployment")
	return nil, nil
}

// env is the agent container's literal environment.
func env(d *appsv1.Deployment) map[string]string {
	out := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		out[e.Name] = e.Value
	}
	return out
}

// TestChartForClustersWithoutKubeProxy: hostNetwork and apiServerOverride
// render as the pod's host network and the in-cluster config's
// KUBERNETES_SERVICE_HOST/PORT; by default neither is set; a host without
// a port is refused at render.
func TestChartForClustersWithoutKubeProxy(t *testing.T) {
	d, err := renderAgent(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Template.Spec.HostNetwork {
		t.Fatal("hostNetwork by default")
	}
	if e := env(d); e["KUBERNETES_SERVICE_HOST"] != "" || e["KUBERNETES_SERVICE_PORT"] != "" {
		t.Fatalf("API server override by default: %v", e)
	}
	d, err = renderAgent(t, map[string]any{"hostNetwork": true,
		"apiServerOverride": map[string]any{"host": "127.0.0.1", "port": "6443"}})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Spec.Template.Spec.HostNetwork {
		t.Fatal("hostNetwork: true did not render")
	}
	if e := env(d); e["KUBERNETES_SERVICE_HOST"] != "127.0.0.1" || e["KUBERNETES_SERVICE_PORT"] != "6443" {
		t.Fatalf("apiServerOverride rendered env %v, want KUBERNETES_SERVICE_HOST=127.0.0.1 and KUBERNETES_SERVICE_PORT=6443", e)
	}
	_, err = renderAgent(t, map[string]any{"apiServerOverride": map[string]any{"host": "127.0.0.1"}})
	if err == nil || !strings.Contains(err.Error(), "apiServerOverride.port is required") {
		t.Fatalf("a host without a port rendered (err %v), want apiServerOverride.port is required", err)
	}
	if _, err = renderAgent(t, map[string]any{"apiServerOverride": map[string]any{"host": "h", "port": "https"}}); err == nil {
		t.Fatal("a port that is no number rendered")
	}
}
