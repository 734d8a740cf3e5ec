// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// readsOnlyItsNamespace proves, with the agents' real ServiceAccount tokens
// as the issuer hands them out, that cluster a's agent reads its members,
// their Services, EndpointSlices, ConfigMaps and Secrets in its own
// namespace (shoal-c-a) and is refused (Forbidden) on cluster a-b's, on the
// users' namespace and cluster-wide; and b the same the other way round.
func readsOnlyItsNamespace(ctx context.Context, t *testing.T, admin, a, b kubernetes.Interface) {
	t.Helper()
	nsA, nsB := v1alpha1.ClusterNamespace("a"), v1alpha1.ClusterNamespace("a-b")
	mustCreateNS(ctx, t, admin, v1alpha1.MemberNamespace)
	for _, ns := range []string{nsA, nsB, v1alpha1.MemberNamespace} {
		if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns},
			Data: map[string][]byte{"k": []byte(ns)}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns}},
			metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	type check struct {
		what string
		do   func(c kubernetes.Interface, ns string) error
	}
	checks := []check{
		{"get pod", func(c kubernetes.Interface, ns string) error {
			_, err := c.CoreV1().Pods(ns).Get(ctx, "on-b", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil // allowed, just not there
			}
			return err
		}},
		{"list pods", func(c kubernetes.Interface, ns string) error {
			_, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
		{"watch pods", func(c kubernetes.Interface, ns string) error {
			w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		}},
		{"get secret", func(c kubernetes.Interface, ns string) error {
			_, err := c.CoreV1().Secrets(ns).Get(ctx, "creds", metav1.GetOptions{})
			return err
		}},
		{"list secrets", func(c kubernetes.Interface, ns string) error {
			_, err := c.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
		{"watch secrets", func(c kubernetes.Interface, ns string) error {
			w, err := c.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		}},
		{"get configmap", func(c kubernetes.Interface, ns string) error {
			_, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{})
			return err
		}},
		{"list configmaps", func(c kubernetes.Interface, ns string) error {
			_, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
		{"watch configmaps", func(c kubernetes.Interface, ns string) error {
			w, err := c.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		}},
		{"list services", func(c kubernetes.Interface, ns string) error {
			_, err := c.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
		{"list endpointslices", func(c kubernetes.Interface, ns string) error {
			_, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
	}
	for _, tc := range []struct {
		agent       string
		c           kubernetes.Interface
		own, others []string
	}{
		{"a", a, []string{nsA}, []string{nsB, v1alpha1.MemberNamespace, metav1.NamespaceAll, metav1.NamespaceDefault}},
		{"a-b", b, []string{nsB}, []string{nsA, v1alpha1.MemberNamespace, metav1.NamespaceAll}},
	} {
		for _, ch := range checks {
			for _, ns := range tc.own {
				if err := ch.do(tc.c, ns); err != nil {
					t.Errorf("agent %s: %s in its namespace %s: %v", tc.agent, ch.what, ns, err)
				}
			}
			for _, ns := range tc.others {
				if err := ch.do(tc.c, ns); !apierrors.IsForbidden(err) {
					t.Errorf("agent %s: %s in namespace %q: got %v, want Forbidden", tc.agent, ch.what, ns, err)
				}
			}
		}
		if _, err := tc.c.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("agent %s lists nodes: got %v, want Forbidden", tc.agent, err)
		}
	}
}
