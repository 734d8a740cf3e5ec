// SPDX-License-Identifier: Apache-2.0

package kubeindex

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestLabelIndex(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{"job": Label("job")})
	pod := func(name, job string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
		if job != "" {
			p.Labels = map[string]string{"job": job}
		}
		return p
	}
	for _, p := range []*corev1.Pod{pod("a-0", "a"), pod("a-1", "a"), pod("b-0", "b"), pod("none", "")} {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", Labels: map[string]string{"job": "a"}}}); err != nil {
		t.Fatal(err)
	}
	pods, err := Of[*corev1.Pod](idx, "job", "a")
	if err != nil || len(pods) != 2 {
		t.Fatalf("pods of a = %d (%v), want 2", len(pods), err)
	}
	svcs, _ := Of[*corev1.Service](idx, "job", "a")
	if len(svcs) != 1 || svcs[0].Name != "a" {
		t.Errorf("services of a = %v, want a", svcs)
	}
	if got, _ := Of[*corev1.Pod](idx, "job", ""); len(got) != 0 {
		t.Errorf("an object without the label is filed under %q: %v", "", got)
	}
	if _, err := Of[*corev1.Pod](idx, "missing", "a"); err == nil {
		t.Error("an unknown index gave no error")
	}
}
