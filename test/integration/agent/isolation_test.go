// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	authenticationv1 "k8s.io/api/authentication/v1"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/hubcluster"
)

func agentClient(t *testing.T, kubeconfig []byte) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func vnodeObj(cluster, pool string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: v1alpha1.VirtualNodePrefix(cluster) + pool, Labels: map[string]string{v1alpha1.LabelCluster: cluster},
	}}
}

// boundPodObj is a pod bound to node in namespace ns.
func boundPodObj(ns, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func leaseObj(node string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: hubcluster.LeaseNamespace}}
}

// TestIsolation proves with a real kube-apiserver that cluster a's agent can
// manage its own virtual nodes, leases and pods and is refused on cluster b's.
func TestIsolation(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a kube-apiserver")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	iss := hubcluster.New(hubCP.Config, hubcluster.WithTokenTTL(3600))
	kcA, err := iss.Issue(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	kcB, err := iss.Issue(ctx, "a-b")
	if err != nil {
		t.Fatal(err)
	}
	a, b := agentClient(t, kcA), agentClient(t, kcB)
	admin := hubAdmin
	mustCreateNS(ctx, t, admin, hubcluster.LeaseNamespace)

	// B's node exists; A must not touch it. Wait for the policy to be active.
	if _, err := b.CoreV1().Nodes().Create(ctx, vnodeObj("a-b", "h100"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("b creates its node: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := a.CoreV1().Nodes().Create(ctx, vnodeObj("a-b", "a100"), metav1.CreateOptions{})
		if err == nil {
			_ = admin.CoreV1().Nodes().Delete(ctx, "shoal-a-b-a100", metav1.DeleteOptions{})
			return false, nil
		}
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), nil
	})
	if err != nil {
		t.Fatalf("policy never refused a's agent creating b's node: %v", err)
	}

	if _, err := a.CoreV1().Nodes().Create(ctx, vnodeObj("a", "h100"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a creates its own node: %v", err)
	}
	unlabelled := vnodeObj("a", "nolabel")
	unlabelled.Labels = nil
	refused(t, "a creates a node without its cluster label", func() error {
		_, err := a.CoreV1().Nodes().Create(ctx, unlabelled, metav1.CreateOptions{})
		return err
	})
	refused(t, "a relabels b's node", func() error {
		n, err := a.CoreV1().Nodes().Get(ctx, "shoal-a-b-h100", metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Labels[v1alpha1.LabelCluster] = "a"
		_, err = a.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	refused(t, "a updates b's node status", func() error {
		n, err := a.CoreV1().Nodes().Get(ctx, "shoal-a-b-h100", metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Capacity = corev1.ResourceList{}
		_, err = a.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	refused(t, "a deletes b's node", func() error {
		return a.CoreV1().Nodes().Delete(ctx, "shoal-a-b-h100", metav1.DeleteOptions{})
	})

	// Leases.
	if _, err := a.CoordinationV1().Leases(hubcluster.LeaseNamespace).Create(ctx, leaseObj("shoal-a-h100"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a creates its own lease: %v", err)
	}
	refused(t, "a creates a lease for another cluster's node", func() error {
		_, err := a.CoordinationV1().Leases(hubcluster.LeaseNamespace).Create(ctx, leaseObj("shoal-other-h100"), metav1.CreateOptions{})
		return err
	})

	// Pods: the hub (admin) binds one pod to each cluster's node, each in
	// its cluster's namespace.
	nsA, nsB := v1alpha1.ClusterNamespace("a"), v1alpha1.ClusterNamespace("a-b")
	for _, p := range []*corev1.Pod{boundPodObj(nsA, "on-a", "shoal-a-h100"), boundPodObj(nsB, "on-b", "shoal-a-b-h100"),
		boundPodObj(nsA, "stray", "shoal-other-h100")} {
		if _, err := admin.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setPhase := func(c kubernetes.Interface, ns, name string) error {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		_, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	}
	if err := setPhase(a, nsA, "on-a"); err != nil {
		t.Fatalf("a updates the status of its own pod: %v", err)
	}
	refused(t, "a updates the status of another cluster's pod", func() error { return setPhase(a, nsB, "on-b") })
	refused(t, "a updates the status of a pod in its namespace bound to another cluster's node", func() error {
		return setPhase(a, nsA, "stray")
	})
	refused(t, "a deletes another cluster's pod", func() error {
		return a.CoreV1().Pods(nsB).Delete(ctx, "on-b", metav1.DeleteOptions{})
	})
	refused(t, "a creates pods", func() error {
		_, err := a.CoreV1().Pods(nsA).Create(ctx, boundPodObj(nsA, "x", "shoal-a-h100"), metav1.CreateOptions{})
		return err
	})
	if err := a.CoreV1().Pods(nsA).Delete(ctx, "on-a", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("a deletes its own pod: %v", err)
	}
	refused(t, "a lists secrets", func() error {
		_, err := a.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
		return err
	})
	readsOnlyItsNamespace(ctx, t, admin, a, b)

	// A refreshes its own token but cannot mint one for b.
	if _, err := a.CoreV1().ServiceAccounts(hubcluster.Namespace).CreateToken(ctx, hubcluster.ServiceAccountName("a"),
		tokenRequest(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a refreshes its own token: %v", err)
	}
	refused(t, "a mints a token for b", func() error {
		_, err := a.CoreV1().ServiceAccounts(hubcluster.Namespace).CreateToken(ctx, hubcluster.ServiceAccountName("a-b"),
			tokenRequest(), metav1.CreateOptions{})
		return err
	})

	// Revoke: a's credentials stop working and its nodes are gone.
	if err := iss.Revoke(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := a.CoreV1().Nodes().Get(ctx, "shoal-a-b-h100", metav1.GetOptions{})
		return apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err), nil
	})
	if err != nil {
		t.Fatalf("revoked credentials still work: %v", err)
	}
	if _, err := admin.CoreV1().Nodes().Get(ctx, "shoal-a-h100", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("revoke left a's node: %v", err)
	}
}

func refused(t *testing.T, what string, do func() error) {
	t.Helper()
	err := do()
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("%s: got %v, want Forbidden", what, err)
	}
}

func tokenRequest() *authenticationv1.TokenRequest {
	ttl := int64(3600)
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl}}
}

func mustCreateNS(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}
