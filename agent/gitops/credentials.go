// SPDX-License-Identifier: Apache-2.0

package gitops

import (
	"context"
	"net/url"

	"github.com/fluxcd/pkg/git"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// authOptions builds the Git transport options for src. Credentials come from
// the Secret src.SecretRef in namespace, read from the workload cluster at
// every fetch; they never leave the agent.
func authOptions(ctx context.Context, c client.Reader, namespace string, src v1alpha1.GitOpsSource) (*git.AuthOptions, error) {
	u, err := url.Parse(src.URL)
	if err != nil {
		return nil, syncErr(v1alpha1.GitOpsReasonInvalidSource, "parse url: %w", err)
	}
	var data map[string][]byte
	if src.SecretRef != "" {
		var s corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: src.SecretRef}, &s); err != nil {
			return nil, syncErr(v1alpha1.GitOpsReasonCredentialsFailed, "read credentials secret %s/%s: %w", namespace, src.SecretRef, err)
		}
		data = s.Data
	}
	opts, err := git.NewAuthOptions(*u, data)
	if err != nil {
		return nil, syncErr(v1alpha1.GitOpsReasonCredentialsFailed, "credentials secret %s/%s: %w", namespace, src.SecretRef, err)
	}
	return opts, nil
}
