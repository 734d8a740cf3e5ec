// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/shoal-dev/shoal/federation/endpoint"
)

// TestDeployBases builds deploy/agent and deploy/hub with kustomize and
// submits every object to a real kube-apiserver as a server-side dry run.
func TestDeployBases(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a kube-apiserver")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy")
	dyn := dynamic.NewForConfigOrDie(hubCP.Config)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(hubAdmin.Discovery()))
	ctx := t.Context()
	_, err := hubAdmin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shoal-system"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, base := range []string{"agent", "hub"} {
		t.Run(base, func(t *testing.T) {
			res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, base))
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]bool{}
			for _, r := range res.Resources() {
				m, err := r.Map()
				if err != nil {
					t.Fatal(err)
				}
				u := unstructuredFrom(m)
				kinds[u.GetKind()] = true
				if k := u.GetKind(); k == "Deployment" || k == "StatefulSet" {
					checkEndpointArgs(t, u.Object)
				}
				gvk := u.GroupVersionKind()
				mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					t.Fatalf("%s: %v", gvk, err)
				}
				var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
				// kustomize stamps its namespace on kinds it does not know to be
				// cluster-scoped (ValidatingAdmissionPolicy); kubectl, like this,
				// follows the API server's scope.
				if u.GetNamespace() != "" && mapping.Scope.Name() == meta.RESTScopeNameNamespace {
					ri = dyn.Resource(mapping.Resource).Namespace(u.GetNamespace())
				}
				_, err = ri.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					t.Errorf("%s %s: %v", u.GetKind(), u.GetName(), err)
				}
			}
			want := map[string][]string{"agent": {"Deployment", "ClusterRole", "Role", "Secret", "ConfigMap", "Service"},
				"hub": {"StatefulSet", "ClusterRole", "Service", "ConfigMap"}}[base]
			for _, k := range want {
				if !kinds[k] {
					t.Errorf("no %s in deploy/%s", k, base)
				}
			}
		})
	}
}

// checkEndpointArgs: a shipped workload passes no join token on its
// command line, keeps /metrics on loopback and probes the health-only
// port.
func checkEndpointArgs(t *testing.T, obj map[string]any) {
	t.Helper()
	containers, _, _ := unstructured.NestedFieldNoCopy(obj, "spec", "template", "spec", "containers")
	for _, c := range containers.([]any) {
		c := c.(map[string]any)
		args, _ := c["args"].([]any)
		var health string
		for _, arg := range args {
			a, _ := arg.(string)
			name, value, _ := strings.Cut(a, "=")
			switch name {
			case "--token":
				t.Errorf("container %s passes the join token on its command line: %s", c["name"], a)
			case "--http-listen", "--metrics-addr":
				if !endpoint.IsLoopback(value) {
					t.Errorf("container %s serves /metrics in plain HTTP off loopback: %s", c["name"], a)
				}
			case "--health-listen":
				health = value
			}
		}
		for _, probe := range []string{"livenessProbe", "readinessProbe"} {
			port, found, _ := unstructured.NestedFieldNoCopy(c, probe, "httpGet", "port")
			if found && (port != "health" || health == "") {
				t.Errorf("container %s: %s on port %v, want the health-only port (--health-listen %q)", c["name"], probe, port, health)
			}
		}
	}
}
