// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestQueueNamespace: the local pod lands in its queue's namespace, which
// is created labelled as Shoal's with the queue's pod-security level
// enforced and the agent's member RoleBinding, and relabelled when a later
// member carries another level.
func TestQueueNamespace(t *testing.T) {
	s, cs, n, _ := startSyncer(t)
	s.SetMemberSubject(&rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "shoal-system", Name: "shoal-agent"})
	// The new RoleBinding takes effect at the second review (an API
	// server's authorizer sees it a moment later): no pod before that.
	reviews := 0
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		reviews++
		r := action.(k8stesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview)
		if a := r.Spec.ResourceAttributes; a == nil || a.Namespace != localNS || a.Verb != "create" || a.Resource != "pods" {
			t.Errorf("review of %+v, want create pods in %s", a, localNS)
		}
		if _, err := cs.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), localNS, "p"); err == nil {
			t.Error("the local pod was created before the agent's member rights took effect")
		}
		r.Status.Allowed = reviews > 1
		return true, r, nil
	})
	ctx := t.Context()
	strict := hubPod(map[string]string{v1alpha1.AnnotationPodSecurity: "restricted"})
	strict.Name, strict.UID = "r", "hub-uid-r"
	if err := s.CreatePod(ctx, "v1", strict); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "r", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a plain container was created at level restricted (%v)", err)
	}
	hub := hubPod(map[string]string{v1alpha1.AnnotationPodSecurity: "baseline"})
	if err := s.CreatePod(ctx, "v1", hub); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "p", metav1.GetOptions{}); err != nil {
		t.Fatalf("local pod in the queue namespace: %v", err)
	}
	if _, err := cs.CoreV1().Pods(hub.Namespace).Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a local pod in the hub pod's namespace (%v)", err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, localNS, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels[v1alpha1.LabelManaged] != "true" || ns.Labels[v1alpha1.PodSecurityEnforceLabel] != "baseline" ||
		ns.Annotations[v1alpha1.AnnotationQueue] != "team" {
		t.Errorf("namespace %v %v", ns.Labels, ns.Annotations)
	}
	if reviews != 2 {
		t.Errorf("%d access reviews before the first pod, want 2 (until the binding took effect)", reviews)
	}
	rb, err := cs.RbacV1().RoleBindings(localNS).Get(ctx, v1alpha1.AgentMemberClusterRole, metav1.GetOptions{})
	if err != nil || rb.RoleRef.Name != v1alpha1.AgentMemberClusterRole || len(rb.Subjects) != 1 || rb.Subjects[0].Name != "shoal-agent" {
		t.Errorf("member RoleBinding %+v (%v)", rb, err)
	}
	n.wait(t, func(p *corev1.Pod) bool { return p.UID == hub.UID && p.Status.Phase == corev1.PodPending })

	// The queue was made privileged: the next member relabels the namespace.
	next := hubPod(map[string]string{v1alpha1.AnnotationPodSecurity: "privileged"})
	next.Name, next.UID = "p2", types.UID("hub-uid-2")
	if err := s.CreatePod(ctx, "v1", next); err != nil {
		t.Fatal(err)
	}
	if ns, _ := cs.CoreV1().Namespaces().Get(ctx, localNS, metav1.GetOptions{}); ns.Labels[v1alpha1.PodSecurityEnforceLabel] != "privileged" {
		t.Errorf("enforce label %q after the level changed, want privileged", ns.Labels[v1alpha1.PodSecurityEnforceLabel])
	}
}

// TestAgentRefusesWhatTheHubShouldHave: a hub pod that reaches the agent
// without the hub's check (made on the hub cluster directly) is refused
// when it violates its level or names no queue: Failed with the reason,
// never created.
func TestAgentRefusesWhatTheHubShouldHave(t *testing.T) {
	s, cs, n, rec := startSyncer(t)
	ctx := t.Context()
	yes := true
	priv := hubPod(map[string]string{v1alpha1.AnnotationPodSecurity: "baseline"})
	priv.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
	hostPath := hubPod(nil) // no level: the default, baseline
	hostPath.Name, hostPath.UID = "hp", "hub-uid-hp"
	hostPath.Spec.Volumes = append(hostPath.Spec.Volumes, corev1.Volume{Name: "root",
		VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
	noQueue := hubPod(nil)
	noQueue.Name, noQueue.UID = "nq", "hub-uid-nq"
	delete(noQueue.Annotations, v1alpha1.AnnotationQueue)
	for _, tc := range []struct {
		pod    *corev1.Pod
		reason string
		says   string
	}{
		{priv, v1alpha1.ReasonPodSecurity, "privileged"},
		{hostPath, v1alpha1.ReasonPodSecurity, "hostPath volumes"},
		{noQueue, v1alpha1.ReasonNoQueue, v1alpha1.AnnotationQueue},
	} {
		if err := s.CreatePod(ctx, "v1", tc.pod); err != nil {
			t.Fatalf("%s: a refusal is reported, not retried: %v", tc.pod.Name, err)
		}
		got := n.wait(t, func(p *corev1.Pod) bool { return p.UID == tc.pod.UID })
		if got.Status.Phase != corev1.PodFailed || got.Status.Reason != tc.reason || !strings.Contains(got.Status.Message, tc.says) {
			t.Errorf("%s: status %s %s %q, want Failed %s naming %q", tc.pod.Name, got.Status.Phase, got.Status.Reason,
				got.Status.Message, tc.reason, tc.says)
		}
		pods, _ := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		for _, p := range pods.Items {
			if p.Name == tc.pod.Name {
				t.Errorf("%s: local pod %s/%s created", tc.pod.Name, p.Namespace, p.Name)
			}
		}
		if err := s.CreatePod(ctx, "v1", tc.pod); err != nil { // virtual-kubelet retrying
			t.Errorf("%s: retried create: %v", tc.pod.Name, err)
		}
		if err := s.DeletePod(ctx, tc.pod); err != nil {
			t.Errorf("%s: delete of a refused member: %v", tc.pod.Name, err)
		}
	}
	if len(rec.Events) < 3 {
		t.Errorf("%d events, want one per refusal", len(rec.Events))
	}
}

// TestAdoptsAnEarlierAgentsMember: a local pod an agent of an earlier
// version made in the hub pod's namespace is adopted, not started again in
// the queue namespace, and deleted where it is.
func TestAdoptsAnEarlierAgentsMember(t *testing.T) {
	s, cs, n, _ := startSyncer(t)
	ctx := t.Context()
	hub := hubPod(nil)
	old := LocalPod(hub, "v1", hub.Namespace)
	delete(old.Annotations, v1alpha1.AnnotationHubNamespace)
	if _, err := cs.CoreV1().Pods(hub.Namespace).Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, ok := s.LocalPodOf(hub); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("earlier local pod not found")
		}
	}
	if err := s.CreatePod(ctx, "v1", hub); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, hub.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the member was started again in the queue namespace (%v)", err)
	}
	if err := s.DeletePod(ctx, hub); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(hub.Namespace).Get(ctx, hub.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the earlier local pod was not deleted (%v)", err)
	}
	n.wait(t, func(p *corev1.Pod) bool { return p.UID == hub.UID && p.Status.Phase == corev1.PodFailed })
}
