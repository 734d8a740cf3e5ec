// SPDX-License-Identifier: Apache-2.0

package hubkube

import (
	"context"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// WaitAccepted blocks until the hub cluster accepts the current token,
// asked with a SelfSubjectReview (which every authenticated identity may
// create), while Run replaces a refused one through Reissue — after the
// agent was offline past the token's life, its first requests are refused
// until then, and the virtual nodes must not start on them (their node
// controllers give up on a refused registration). Any other answer, the
// hub cluster unreachable included, returns at once: the callers retry
// those themselves, as does the end of ctx.
func (c *Client) WaitAccepted(ctx context.Context, cs kubernetes.Interface) {
	if c.current() == "" || c.Reissue == nil {
		return
	}
	bo := backoff{initial: 500 * time.Millisecond, max: 10 * time.Second}
	quiet := klog.NewContext(ctx, klog.Logger{}) // the review's answer names the identity only, but keep tokens out of -v≥8 logs
	for {
		_, err := cs.AuthenticationV1().SelfSubjectReviews().Create(quiet, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if !apierrors.IsUnauthorized(err) {
			return
		}
		klog.FromContext(ctx).Info("The hub cluster refuses the agent's token; waiting for the hub to reissue it before starting the virtual nodes")
		select {
		case <-ctx.Done():
			return
		case <-time.After(bo.next()):
		}
	}
}
