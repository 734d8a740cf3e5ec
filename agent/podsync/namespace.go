// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// localKey is the namespace and name of the local pod of hub pod hub: the
// namespace of its queue (v1alpha1.LocalNamespaceOf), never one the pod
// names itself. It is false for a pod that names no queue.
func localKey(hub *corev1.Pod) (types.NamespacedName, bool) {
	ns, ok := v1alpha1.LocalNamespaceOf(hub.Annotations)
	return key(ns, hub.Name), ok
}

// hubKeyOf is the namespace and name of the hub pod of local pod lp.
func hubKeyOf(lp *corev1.Pod) types.NamespacedName {
	return key(v1alpha1.HubNamespaceOf(lp.Namespace, lp.Annotations), lp.Name)
}

// nsState is what the syncer last made of a queue namespace.
type nsState struct {
	level v1alpha1.PodSecurityLevel
}

// ensureNamespace makes the namespace ns of queue exist, labelled as
// managed by Shoal and with the Pod Security Admission enforce label at
// level (so that the workload cluster's own admission enforces it too;
// updated when the level changes), and gives the agent its member rights
// in it (ensureMemberBinding). A namespace of that name that Shoal did not
// create is refused.
func (s *Syncer) ensureNamespace(ctx context.Context, ns, queue string, level v1alpha1.PodSecurityLevel) error {
	s.mu.Lock()
	st, ok := s.nsReady[ns]
	s.mu.Unlock()
	if ok && st.level == level {
		return nil
	}
	if err := s.applyNamespace(ctx, ns, queue, level); err != nil {
		return fmt.Errorf("ensure namespace %s: %w", ns, err)
	}
	created, err := s.ensureMemberBinding(ctx, ns)
	if err != nil {
		return fmt.Errorf("ensure the agent's rights in namespace %s: %w", ns, err)
	}
	if created {
		if err := s.waitMemberRights(ctx, ns); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.nsReady[ns] = nsState{level: level}
	s.mu.Unlock()
	return nil
}

// namespaceLabels are the labels of a queue namespace at level.
func namespaceLabels(level v1alpha1.PodSecurityLevel) map[string]string {
	return map[string]string{v1alpha1.LabelManaged: "true",
		v1alpha1.PodSecurityEnforceLabel: string(level), v1alpha1.PodSecurityEnforceVersionLabel: "latest"}
}

func (s *Syncer) applyNamespace(ctx context.Context, ns, queue string, level v1alpha1.PodSecurityLevel) error {
	api := s.local.CoreV1().Namespaces()
	cur, err := api.Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cur, err = api.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: namespaceLabels(level),
			Annotations: map[string]string{v1alpha1.AnnotationQueue: queue}}}, metav1.CreateOptions{})
		if err == nil {
			klog.FromContext(ctx).V(2).Info("Queue namespace created", "namespace", ns, "queue", queue, "podSecurity", level)
			return nil
		}
		if apierrors.IsAlreadyExists(err) {
			cur, err = api.Get(ctx, ns, metav1.GetOptions{})
		}
	}
	if err != nil {
		return err
	}
	if cur.Labels[v1alpha1.LabelManaged] != "true" {
		return fmt.Errorf("namespace %s exists and is not managed by Shoal (no %s=true label); members of queue %s are not created in it",
			ns, v1alpha1.LabelManaged, queue)
	}
	want := namespaceLabels(level)
	drift := false
	for k, v := range want {
		drift = drift || cur.Labels[k] != v
	}
	if !drift {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": want}})
	if err != nil {
		return err
	}
	if _, err := api.Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Queue namespace's pod-security level changed", "namespace", ns, "queue", queue,
		"from", cur.Labels[v1alpha1.PodSecurityEnforceLabel], "to", level)
	return nil
}

// SetMemberSubject sets the RBAC subject of the agent's own identity in the
// workload cluster (SelfSubject), which ensureNamespace binds to
// v1alpha1.AgentMemberClusterRole in every queue namespace; nil (the
// default) binds nothing (call before Run).
func (s *Syncer) SetMemberSubject(subj *rbacv1.Subject) { s.self = subj }

// ensureMemberBinding binds the agent's identity (SetMemberSubject) to the
// ClusterRole v1alpha1.AgentMemberClusterRole in namespace ns, with a
// RoleBinding of that name: the agent's rights on pods, Services,
// EndpointSlices, ConfigMaps, Secrets, ServiceAccounts and events exist only
// in the namespaces it manages (deploy/agent/rbac.yaml). It says whether
// it created the RoleBinding (then its rights take a moment: waitMemberRights).
func (s *Syncer) ensureMemberBinding(ctx context.Context, ns string) (bool, error) {
	if s.self == nil {
		return false, nil
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.AgentMemberClusterRole, Namespace: ns,
			Labels: map[string]string{v1alpha1.LabelManaged: "true"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: v1alpha1.AgentMemberClusterRole},
		Subjects: []rbacv1.Subject{*s.self},
	}
	_, err := s.local.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return false, nil
	}
	return err == nil, err
}

// SelfSubject asks the workload cluster behind c who the agent is (a
// SelfSubjectReview, which every authenticated identity may create) and
// returns that identity as an RBAC subject: a ServiceAccount for
// "system:serviceaccount:<ns>:<name>", else a User.
func SelfSubject(ctx context.Context, c kubernetes.Interface) (*rbacv1.Subject, error) {
	r, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("ask the workload cluster who the agent is: %w", err)
	}
	user := r.Status.UserInfo.Username
	if user == "" {
		return nil, fmt.Errorf("the workload cluster's SelfSubjectReview names no user")
	}
	return subjectOf(user), nil
}

// subjectOf is the RBAC subject of user name.
func subjectOf(user string) *rbacv1.Subject {
	const saPrefix = "system:serviceaccount:"
	if rest, ok := strings.CutPrefix(user, saPrefix); ok {
		if ns, name, ok := strings.Cut(rest, ":"); ok {
			return &rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
		}
	}
	return &rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}
}
