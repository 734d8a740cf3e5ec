// SPDX-License-Identifier: Apache-2.0

package charts_test

import (
	"encoding/base64"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shoal-dev/shoal/internal/charts"
)

// testKey is a well-formed PKI encryption key: 32 bytes, base64.
var testKey = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

// rendered is one chart's objects by kind/name.
type rendered map[string]*unstructured.Unstructured

func renderChart(t *testing.T, chart string, values map[string]any) rendered {
	t.Helper()
	objs, err := charts.Render(filepath.Join(repoRoot(t), "deploy/charts", chart), charts.Release{Name: chart, Namespace: "shoal-system", Values: values})
	if err != nil {
		t.Fatalf("render %s: %v", chart, err)
	}
	out := rendered{}
	for _, o := range objs {
		out[o.GetKind()+"/"+o.GetName()] = o.Unstructured
	}
	return out
}

func (r rendered) get(t *testing.T, key string) *unstructured.Unstructured {
	t.Helper()
	o, ok := r[key]
	if !ok {
		t.Fatalf("no %s rendered", key)
	}
	return o
}

// podSpec is the workload's pod spec and its only container.
func podSpec(t *testing.T, o *unstructured.Unstructured) (spec, container map[string]any) {
	t.Helper()
	spec, _, _ = unstructured.NestedMap(o.Object, "spec", "template", "spec")
	cs, _ := spec["containers"].([]any)
	if len(cs) != 1 {
		t.Fatalf("%s: %d containers", o.GetName(), len(cs))
	}
	return spec, cs[0].(map[string]any)
}

func strs(t *testing.T, m map[string]any, field string) []string {
	t.Helper()
	v, _, err := unstructured.NestedStringSlice(m, field)
	if err != nil {
		t.Fatalf("%s: %v", field, err)
	}
	return v
}

// named returns the item of list (volumes, volumeMounts, ports) named name.
func named(m map[string]any, list, name string) map[string]any {
	items, _ := m[list].([]any)
	for _, it := range items {
		if im, _ := it.(map[string]any); im["name"] == name {
			return im
		}
	}
	return nil
}

func flagValues(args []string, flag string) []string {
	var out []string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+flag+"="); ok {
			out = append(out, v)
		} else if a == "--"+flag {
			out = append(out, "")
		}
	}
	return out
}

func wantFlag(t *testing.T, args []string, flag, want string) {
	t.Helper()
	if got := flagValues(args, flag); len(got) != 1 || got[0] != want {
		t.Errorf("--%s: got %q, want exactly %q (args %q)", flag, got, want, args)
	}
}

func wantNoFlag(t *testing.T, args []string, flag string) {
	t.Helper()
	if got := flagValues(args, flag); len(got) != 0 {
		t.Errorf("--%s is set (%q) but should not be", flag, got)
	}
}

// TestHubReplicated: three replicas on external etcd with the key Secret
// get the key file mounted and named, the Service's and every replica's
// stable name, the election TTL, a headless Service behind the
// StatefulSet's serviceName, and the readiness probe on /readyz.
func TestHubReplicated(t *testing.T) {
	r := renderChart(t, "shoal-hub", map[string]any{
		"replicas":    3,
		"electionTTL": "15s",
		"etcd":        map[string]any{"endpoints": []any{"https://etcd-0:2379", "https://etcd-1:2379"}, "tlsSecretName": "etcd-client"},
		"pki":         map[string]any{"encryptionKey": map[string]any{"existingSecret": "hub-pki", "secretKey": "key"}},
	})
	sts := r.get(t, "StatefulSet/shoal-hub")
	if n, _, _ := unstructured.NestedFieldNoCopy(sts.Object, "spec", "replicas"); num(n) != 3 {
		t.Errorf("replicas %v, want 3", n)
	}
	spec, c := podSpec(t, sts)
	args := strs(t, c, "args")
	wantFlag(t, args, "pki-encryption-key-file", "/etc/shoal/pki-key/pki.key")
	wantFlag(t, args, "service-name", "shoal-hub.shoal-system.svc")
	wantFlag(t, args, "peers", "shoal-hub-0.shoal-hub-peers.shoal-system.svc:7443,shoal-hub-1.shoal-hub-peers.shoal-system.svc:7443,shoal-hub-2.shoal-hub-peers.shoal-system.svc:7443")
	wantFlag(t, args, "election-ttl", "15s")
	wantFlag(t, args, "etcd-endpoints", "https://etcd-0:2379,https://etcd-1:2379")
	wantFlag(t, args, "data-dir", "/var/lib/shoal")

	vol := named(spec, "volumes", "pki-key")
	if vol == nil {
		t.Fatal("no pki-key volume")
	}
	sec, _ := vol["secret"].(map[string]any)
	items, _ := sec["items"].([]any)
	if sec["secretName"] != "hub-pki" || len(items) != 1 || items[0].(map[string]any)["key"] != "key" || items[0].(map[string]any)["path"] != "pki.key" {
		t.Errorf("pki-key volume %v: want Secret hub-pki, key key as pki.key", vol)
	}
	if m := named(c, "volumeMounts", "pki-key"); m == nil || m["mountPath"] != "/etc/shoal/pki-key" || m["readOnly"] != true {
		t.Errorf("pki-key mount %v: want read-only at /etc/shoal/pki-key", m)
	}
	if _, made := r["Secret/shoal-hub-pki-key"]; made {
		t.Error("the chart made a key Secret although existingSecret is set")
	}
	// Each replica its own data volume.
	if vct, _, _ := unstructured.NestedSlice(sts.Object, "spec", "volumeClaimTemplates"); len(vct) != 1 {
		t.Errorf("%d volumeClaimTemplates, want the data volume", len(vct))
	}

	probe, _, _ := unstructured.NestedMap(c, "readinessProbe", "httpGet")
	if probe["path"] != "/readyz" || probe["port"] != "health" {
		t.Errorf("readiness probe %v: want /readyz on port health", probe)
	}
	if p := named(c, "ports", "health"); p == nil || wantListenPort(t, args, "health-listen") != num(p["containerPort"]) {
		t.Errorf("port health %v is not --health-listen's", p)
	}

	svcName, _, _ := unstructured.NestedString(sts.Object, "spec", "serviceName")
	headless := r.get(t, "Service/"+svcName)
	if ip, _, _ := unstructured.NestedString(headless.Object, "spec", "clusterIP"); ip != "None" || svcName != "shoal-hub-peers" {
		t.Errorf("the StatefulSet's Service %s has clusterIP %q, want headless shoal-hub-peers", svcName, ip)
	}
	sel, _, _ := unstructured.NestedStringMap(headless.Object, "spec", "selector")
	podLabels, _, _ := unstructured.NestedStringMap(sts.Object, "spec", "template", "metadata", "labels")
	for k, v := range sel {
		if podLabels[k] != v {
			t.Errorf("headless Service selector %s=%s does not select the pods (%v)", k, v, podLabels)
		}
	}
}

// num is a decoded number (the decoder gives int64 or float64), -1 if v
// is none.
func num(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return -1
}

// wantListenPort is the port of --flag=host:port.
func wantListenPort(t *testing.T, args []string, flag string) int64 {
	t.Helper()
	v := flagValues(args, flag)
	if len(v) != 1 {
		t.Fatalf("--%s: %q", flag, v)
	}
	_, port, _ := strings.Cut(v[0], ":")
	n, err := strconv.ParseInt(port, 10, 64)
	if err != nil {
		t.Fatalf("--%s=%s: %v", flag, v[0], err)
	}
	return n
}

// TestHubKeyFromValue: pki.encryptionKey.value makes the Secret the
// volume mounts, holding the key as given.
func TestHubKeyFromValue(t *testing.T) {
	r := renderChart(t, "shoal-hub", map[string]any{
		"replicas": 2,
		"etcd":     map[string]any{"endpoints": []any{"https://etcd:2379"}},
		"pki":      map[string]any{"encryptionKey": map[string]any{"value": testKey}},
	})
	sec := r.get(t, "Secret/shoal-hub-pki-key")
	data, _, _ := unstructured.NestedStringMap(sec.Object, "data")
	got, err := base64.StdEncoding.DecodeString(data["pki.key"])
	if err != nil || string(got) != testKey {
		t.Errorf("Secret data pki.key %q (%v): want the key %q", got, err, testKey)
	}
	spec, c := podSpec(t, r.get(t, "StatefulSet/shoal-hub"))
	if v := named(spec, "volumes", "pki-key"); v == nil || v["secret"].(map[string]any)["secretName"] != "shoal-hub-pki-key" {
		t.Errorf("pki-key volume %v: want Secret shoal-hub-pki-key", v)
	}
	wantFlag(t, strs(t, c, "args"), "peers", "shoal-hub-0.shoal-hub-peers.shoal-system.svc:7443,shoal-hub-1.shoal-hub-peers.shoal-system.svc:7443")
}

// TestHubDefaults: one replica has no key, no election TTL flag, and the
// REST face with the web view on the Service.
func TestHubDefaults(t *testing.T) {
	r := renderChart(t, "shoal-hub", nil)
	_, c := podSpec(t, r.get(t, "StatefulSet/shoal-hub"))
	args := strs(t, c, "args")
	wantNoFlag(t, args, "pki-encryption-key-file")
	wantNoFlag(t, args, "election-ttl")
	wantNoFlag(t, args, "tracing-endpoint")
	wantFlag(t, args, "peers", "shoal-hub-0.shoal-hub-peers.shoal-system.svc:7443")
	wantFlag(t, args, "rest-listen", "0.0.0.0:7444")
	wantFlag(t, args, "web-ui", "true")
	if p := named(c, "ports", "rest"); p == nil || num(p["containerPort"]) != 7444 {
		t.Errorf("container port rest %v, want 7444", p)
	}
	svc := r.get(t, "Service/shoal-hub")
	if p := named(svc.Object["spec"].(map[string]any), "ports", "rest"); p == nil || num(p["port"]) != 7444 || p["targetPort"] != "rest" {
		t.Errorf("Service port rest %v, want 7444 -> rest", p)
	}

	r = renderChart(t, "shoal-hub", map[string]any{"rest": map[string]any{"enabled": false}})
	_, c = podSpec(t, r.get(t, "StatefulSet/shoal-hub"))
	wantNoFlag(t, strs(t, c, "args"), "rest-listen")
	wantNoFlag(t, strs(t, c, "args"), "web-ui")
	if p := named(r.get(t, "Service/shoal-hub").Object["spec"].(map[string]any), "ports", "rest"); p != nil || named(c, "ports", "rest") != nil {
		t.Error("rest.enabled false still exposes the rest port")
	}
	r = renderChart(t, "shoal-hub", map[string]any{"rest": map[string]any{"webUI": false}})
	_, c = podSpec(t, r.get(t, "StatefulSet/shoal-hub"))
	wantFlag(t, strs(t, c, "args"), "web-ui", "false")
}

// TestTracing: the tracing values become both binaries' flags, the CA
// Secret mounted where --tracing-ca points.
func TestTracing(t *testing.T) {
	agentVals := func(tr map[string]any) map[string]any {
		return map[string]any{"hub": map[string]any{"address": "hub:7443"}, "cluster": map[string]any{"name": "eu1"},
			"kubelet": map[string]any{"clientCA": "pem"}, "tracing": tr}
	}
	for _, chart := range []string{"shoal-hub", "shoal-agent"} {
		t.Run(chart, func(t *testing.T) {
			vals := func(tr map[string]any) map[string]any {
				if chart == "shoal-agent" {
					return agentVals(tr)
				}
				return map[string]any{"tracing": tr}
			}
			workload := map[string]string{"shoal-hub": "StatefulSet/shoal-hub", "shoal-agent": "Deployment/shoal-agent"}[chart]
			r := renderChart(t, chart, vals(map[string]any{"endpoint": "otel-collector.observability:4317", "samplingRatio": 0.25, "caSecretName": "otel-ca"}))
			spec, c := podSpec(t, r.get(t, workload))
			args := strs(t, c, "args")
			wantFlag(t, args, "tracing-endpoint", "otel-collector.observability:4317")
			wantFlag(t, args, "tracing-sampling-ratio", "0.25")
			wantFlag(t, args, "tracing-ca", "/etc/shoal/tracing-ca/ca.crt")
			wantNoFlag(t, args, "tracing-insecure")
			if v := named(spec, "volumes", "tracing-ca"); v == nil || v["secret"].(map[string]any)["secretName"] != "otel-ca" {
				t.Errorf("tracing-ca volume %v: want Secret otel-ca", v)
			}
			if m := named(c, "volumeMounts", "tracing-ca"); m == nil || m["mountPath"] != "/etc/shoal/tracing-ca" {
				t.Errorf("tracing-ca mount %v", m)
			}

			r = renderChart(t, chart, vals(map[string]any{"endpoint": "collector:4317", "insecure": true}))
			spec, c = podSpec(t, r.get(t, workload))
			args = strs(t, c, "args")
			wantFlag(t, args, "tracing-insecure", "")
			wantFlag(t, args, "tracing-sampling-ratio", "1")
			wantNoFlag(t, args, "tracing-ca")
			if named(spec, "volumes", "tracing-ca") != nil {
				t.Error("a tracing-ca volume without caSecretName")
			}

			for _, bad := range []struct {
				tr   map[string]any
				want string
			}{
				{map[string]any{"endpoint": "c:4317", "insecure": true, "caSecretName": "x"}, "exclude each other"},
				{map[string]any{"insecure": true}, "need tracing.endpoint"},
				{map[string]any{"endpoint": "c:4317", "samplingRatio": 2}, "samplingRatio"},
				{map[string]any{"endpoint": "https://c:4317"}, "endpoint"},
			} {
				_, err := charts.Render(filepath.Join(repoRoot(t), "deploy/charts", chart), charts.Release{Name: chart, Namespace: "shoal-system", Values: vals(bad.tr)})
				if err == nil || !strings.Contains(err.Error(), bad.want) {
					t.Errorf("tracing %v: got %v, want an error with %q", bad.tr, err, bad.want)
				}
			}
		})
	}
}
