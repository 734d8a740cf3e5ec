// SPDX-License-Identifier: Apache-2.0

package charts_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/shoal-dev/shoal/internal/charts"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestLint: helm lint's rules pass on both charts with the values of the
// kustomize bases, warnings included.
func TestLint(t *testing.T) {
	root := repoRoot(t)
	for _, b := range charts.Bases {
		if err := charts.Lint(filepath.Join(root, b.Chart), b.Release.Namespace, b.Release.Values); err != nil {
			t.Errorf("helm lint %s: %v", b.Chart, err)
		}
	}
}

// TestBasesCurrent: deploy/hub and deploy/agent are what make generate
// writes from the charts (make verify checks the same).
func TestBasesCurrent(t *testing.T) {
	root := repoRoot(t)
	for _, b := range charts.Bases {
		files, err := b.Files(root)
		if err != nil {
			t.Fatal(err)
		}
		for rel, want := range files {
			got, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s is not what the chart renders (err %v): run make generate", rel, err)
			}
		}
	}
}

// TestValuesRefused: the schema and the templates refuse values that
// cannot work, naming what is wrong.
func TestValuesRefused(t *testing.T) {
	root := repoRoot(t)
	hub, agent := filepath.Join(root, "deploy/charts/shoal-hub"), filepath.Join(root, "deploy/charts/shoal-agent")
	agentOK := func() map[string]any {
		return map[string]any{"hub": map[string]any{"address": "hub:7443"}, "cluster": map[string]any{"name": "eu1"},
			"kubelet": map[string]any{"clientCA": "pem"}}
	}
	cases := []struct {
		name, chart, ns string
		values          map[string]any
		want            string
	}{
		{"three replicas on embedded etcd", hub, "shoal-system", map[string]any{"replicas": 3}, "needs external etcd"},
		{"another namespace", hub, "default", nil, "shoal-system only"},
		{"no replicas", hub, "shoal-system", map[string]any{"replicas": 0}, "replicas"},
		{"an unknown value", hub, "shoal-system", map[string]any{"replica": 3}, "replica"},
		{"three replicas without the PKI key", hub, "shoal-system", map[string]any{"replicas": 3, "etcd": map[string]any{"endpoints": []any{"https://etcd:2379"}}}, "pki.encryptionKey.existingSecret"},
		{"a PKI key on embedded etcd", hub, "shoal-system", map[string]any{"pki": map[string]any{"encryptionKey": map[string]any{"existingSecret": "k"}}}, "set etcd.endpoints"},
		{"a PKI key secret and value", hub, "shoal-system", map[string]any{"etcd": map[string]any{"endpoints": []any{"https://etcd:2379"}},
			"pki": map[string]any{"encryptionKey": map[string]any{"existingSecret": "k", "value": testKey}}}, "not both"},
		{"a PKI key of the wrong length", hub, "shoal-system", map[string]any{"etcd": map[string]any{"endpoints": []any{"https://etcd:2379"}},
			"pki": map[string]any{"encryptionKey": map[string]any{"value": "c2hvcnQ="}}}, "value"},
		{"an election TTL without unit", hub, "shoal-system", map[string]any{"electionTTL": "10"}, "electionTTL"},
		{"a plain etcd address", hub, "shoal-system", map[string]any{"etcd": map[string]any{"endpoints": []any{"etcd:2379"}}}, "endpoints"},
		{"no hub address", agent, "shoal-system", map[string]any{"cluster": map[string]any{"name": "eu1"}, "kubelet": map[string]any{"clientCA": "pem"}}, "hub.address is required"},
		{"no kubelet client CA", agent, "shoal-system", map[string]any{"hub": map[string]any{"address": "hub:7443"}, "cluster": map[string]any{"name": "eu1"}}, "kubelet.clientCA is required"},
		{"a token without CA hash", agent, "shoal-system", func() map[string]any {
			v := agentOK()
			v["join"] = map[string]any{"token": "abc.def"}
			return v
		}(), "join.caHash is required"},
		{"a bad GitOps verb", agent, "shoal-system", func() map[string]any {
			v := agentOK()
			v["gitops"] = map[string]any{"enabled": true, "rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"escalate"}}}}
			return v
		}(), "verbs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := charts.Render(c.chart, charts.Release{Name: "r", Namespace: c.ns, Values: c.values})
			t.Log(err)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("render: got %v, want an error with %q", err, c.want)
			}
		})
	}
	if _, err := charts.Render(agent, charts.Release{Name: "r", Namespace: "shoal-system", Values: agentOK()}); err != nil {
		t.Errorf("the agent chart with the required values: %v", err)
	}
}
