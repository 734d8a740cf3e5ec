// SPDX-License-Identifier: Apache-2.0

package hubcluster

import (
	"fmt"
	"strconv"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// policyExpressions returns the CEL validations that confine an agent's
// writes. Each one is guarded by the resource it is about, so one policy
// covers nodes, leases and pods.
//
// Node names alone are ambiguous between clusters "a" and "a-b" (shoal-a-b-x
// starts with shoal-a-); nodes are therefore also matched on their
// v1alpha1.LabelCluster label, which the policy forbids any other agent to set or
// change. Leases and pods are matched on the node-name prefix; the hub refuses
// cluster names that are a dash-prefix of another (see docs/agent.md).
func policyExpressions(cluster string) []admissionv1.Validation {
	prefix := strconv.Quote(v1alpha1.VirtualNodePrefix(cluster))
	c := strconv.Quote(cluster)
	label := strconv.Quote(v1alpha1.LabelCluster)
	ownNode := func(o string) string {
		return fmt.Sprintf("(%[1]s.metadata.name.startsWith(%[2]s) && has(%[1]s.metadata.labels) && "+
			"%[4]s in %[1]s.metadata.labels && %[1]s.metadata.labels[%[4]s] == %[3]s)", o, prefix, c, label)
	}
	boundPod := func(o string) string {
		return fmt.Sprintf("(has(%[1]s.spec.nodeName) && %[1]s.spec.nodeName.startsWith(%[2]s))", o, prefix)
	}
	return []admissionv1.Validation{
		{
			Expression: fmt.Sprintf("request.resource.resource != 'nodes' || ((object == null || %s) && (oldObject == null || %s))",
				ownNode("object"), ownNode("oldObject")),
			Message: fmt.Sprintf("agent of cluster %s may only change its own virtual nodes (%s*, label %s=%s)", cluster, v1alpha1.VirtualNodePrefix(cluster), v1alpha1.LabelCluster, cluster),
			Reason:  ptr(metav1.StatusReasonForbidden),
		},
		{
			Expression: fmt.Sprintf("request.resource.resource != 'leases' || (request.namespace == 'kube-node-lease' && "+
				"(object == null || object.metadata.name.startsWith(%[1]s)) && (oldObject == null || oldObject.metadata.name.startsWith(%[1]s)))", prefix),
			Message: fmt.Sprintf("agent of cluster %s may only change the leases of its own virtual nodes", cluster),
			Reason:  ptr(metav1.StatusReasonForbidden),
		},
		{
			Expression: fmt.Sprintf("request.resource.resource != 'pods' || ((object == null || %s) && (oldObject == null || %s))",
				boundPod("object"), boundPod("oldObject")),
			Message: fmt.Sprintf("agent of cluster %s may only change pods bound to its own virtual nodes", cluster),
			Reason:  ptr(metav1.StatusReasonForbidden),
		},
	}
}

func ptr[T any](v T) *T { return &v }

// policy confines the cluster's agent; failurePolicy Fail so that an
// expression error denies rather than admits.
func policy(cluster string) *admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration {
	spec := admissionv1ac.ValidatingAdmissionPolicySpec().
		WithFailurePolicy(admissionv1.Fail).
		WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(
			admissionv1ac.NamedRuleWithOperations().WithOperations(admissionv1.Create, admissionv1.Update, admissionv1.Delete).
				WithAPIGroups("").WithAPIVersions("*").WithResources("nodes", "nodes/status", "pods", "pods/status"),
			admissionv1ac.NamedRuleWithOperations().WithOperations(admissionv1.Create, admissionv1.Update, admissionv1.Delete).
				WithAPIGroups("coordination.k8s.io").WithAPIVersions("*").WithResources("leases"),
		)).
		WithMatchConditions(admissionv1ac.MatchCondition().WithName("is-agent").
			WithExpression(fmt.Sprintf("request.userInfo.username == %s", strconv.Quote(Username(cluster)))))
	for _, v := range policyExpressions(cluster) {
		va := admissionv1ac.Validation().WithExpression(v.Expression).WithMessage(v.Message)
		if v.Reason != nil {
			va = va.WithReason(*v.Reason)
		}
		spec = spec.WithValidations(va)
	}
	return admissionv1ac.ValidatingAdmissionPolicy(objectName(cluster)).WithLabels(labels(cluster)).WithSpec(spec)
}

func policyBinding(cluster string) *admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration {
	return admissionv1ac.ValidatingAdmissionPolicyBinding(objectName(cluster)).WithLabels(labels(cluster)).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicyBindingSpec().
			WithPolicyName(objectName(cluster)).
			WithValidationActions(admissionv1.Deny))
}
