// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"

	"k8s.io/klog/v2"
)

// Quiet returns ctx with a logger that drops everything, for the
// Kubernetes API calls that carry credentials: client-go logs request and
// response bodies through the context's logger at -v=8 and above, which
// would print the agent's key (the credentials Secret) or a hub-cluster
// token (TokenRequest).
func Quiet(ctx context.Context) context.Context { return klog.NewContext(ctx, klog.Logger{}) }
