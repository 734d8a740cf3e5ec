// SPDX-License-Identifier: Apache-2.0

package deploy_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/shoal-dev/shoal/internal/charts"
)

// chartDir is deploy/charts/<name> in this checkout.
func chartDir(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", "charts", name)
}

// render renders chart <name> as `helm install <name> --namespace shoal-system` with values.
func render(t *testing.T, name string, values map[string]any) []charts.Object {
	t.Helper()
	objs, err := charts.Render(chartDir(name), charts.Release{Name: name, Namespace: "shoal-system", Values: values})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// workload is the chart's one Deployment or StatefulSet.
func workload(t *testing.T, objs []charts.Object) charts.Object {
	t.Helper()
	var out []charts.Object
	for _, o := range objs {
		if k := o.GetKind(); k == "Deployment" || k == "StatefulSet" {
			out = append(out, o)
		}
	}
	if len(out) != 1 {
		t.Fatalf("the chart renders %d workloads, want 1", len(out))
	}
	return out[0]
}

// install creates or updates, as an administrator, every object the chart
// rendered except its workload (which runs as a process here): the
// Namespace, ServiceAccounts, RBAC, admission policies, ConfigMaps,
// Secrets and Services. An update replaces the object (a ClusterRole's
// rules with it).
func install(ctx context.Context, t *testing.T, admin *rest.Config, objs []charts.Object) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(admin)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kubernetes.NewForConfigOrDie(admin).Discovery()))
	// Namespaces first.
	ordered := make([]charts.Object, 0, len(objs))
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			ordered = append(ordered, o)
		}
	}
	for _, o := range objs {
		if k := o.GetKind(); k != "Namespace" && k != "Deployment" && k != "StatefulSet" {
			ordered = append(ordered, o)
		}
	}
	for _, o := range ordered {
		u := o.DeepCopy()
		gvk := u.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk, u.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(mapping.Resource).Namespace(u.GetNamespace())
		}
		cur, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = ri.Create(ctx, u, metav1.CreateOptions{})
		case err == nil:
			u.SetResourceVersion(cur.GetResourceVersion())
			if u.GetKind() == "Service" { // the allocated cluster IP stays
				ip, _, _ := unstructured.NestedFieldCopy(cur.Object, "spec", "clusterIP")
				_ = unstructured.SetNestedField(u.Object, ip, "spec", "clusterIP")
			}
			_, err = ri.Update(ctx, u, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatalf("install %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
}

// mintToken asks the cluster for a token of ServiceAccount ns/name
// (TokenRequest), as the kubelet does for the pod's projected token.
func mintToken(ctx context.Context, t *testing.T, admin kubernetes.Interface, ns, name string) string {
	t.Helper()
	exp := int64(2 * time.Hour / time.Second)
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for ServiceAccount %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// withoutRule returns objs with the rules of role kind/name that name
// resource removed (a deep copy), and fails when there is none.
func withoutRule(t *testing.T, objs []charts.Object, kind, name, resource string) []charts.Object {
	t.Helper()
	out := make([]charts.Object, 0, len(objs))
	dropped := 0
	for _, o := range objs {
		o = charts.Object{Template: o.Template, Unstructured: o.DeepCopy()}
		if o.GetKind() == kind && o.GetName() == name {
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			var kept []any
			for _, r := range rules {
				res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
				if contains(res, resource) {
					dropped++
					continue
				}
				kept = append(kept, r)
			}
			if err := unstructured.SetNestedSlice(o.Object, kept, "rules"); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, o)
	}
	if dropped == 0 {
		t.Fatalf("the chart's %s %s has no rule on %s", kind, name, resource)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
