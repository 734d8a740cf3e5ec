// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"path/filepath"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
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
				gvk := u.GroupVersionKind()
				mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					t.Fatalf("%s: %v", gvk, err)
				}
				var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
				if u.GetNamespace() != "" {
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
