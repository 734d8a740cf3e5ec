// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"fmt"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// memberRightsTimeout bounds the wait for a new member RoleBinding to take
// effect.
const memberRightsTimeout = 15 * time.Second

// waitMemberRights waits until the agent may create pods in namespace ns
// (a SelfSubjectAccessReview, which every identity may ask): the API
// server's authorizer sees a RoleBinding a moment after it is created, and
// until then the member's local pod and its dependencies' copies are
// refused (found by test/integration/deploy: without the wait the first
// gang of every new queue failed once, Forbidden, and was requeued).
func (s *Syncer) waitMemberRights(ctx context.Context, ns string) error {
	review := &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}}}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, memberRightsTimeout, true, func(ctx context.Context) (bool, error) {
		r, err := s.local.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = r.Status.Reason
		return r.Status.Allowed, nil
	})
	if err != nil {
		return fmt.Errorf("the member RoleBinding in %s did not take effect within %s (last: %q): %w", ns, memberRightsTimeout, last, err)
	}
	return nil
}
