// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent/hubclient"
)

// credentials returns the stored credentials, registering first if there are none.
func (a *Agent) credentials(ctx context.Context, local kubernetes.Interface) (*hubclient.Credentials, error) {
	log := klog.FromContext(ctx)
	store := hubclient.SecretStore{Client: local, Namespace: a.cfg.Namespace}
	creds, err := store.Load(ctx)
	if err == nil {
		if creds.Cluster != a.cfg.Cluster {
			return nil, fmt.Errorf("stored credentials are for cluster %q, not %q: delete secret %s/%s to re-register",
				creds.Cluster, a.cfg.Cluster, a.cfg.Namespace, hubclient.SecretName)
		}
		log.Info("Using stored credentials", "secret", hubclient.SecretName)
		return creds, nil
	}
	if !errors.Is(err, hubclient.ErrNoCredentials) {
		return nil, err
	}
	if a.cfg.Token == "" || a.cfg.CAHash == "" {
		return nil, errors.New("not registered yet: a join token (--token-file or $SHOAL_JOIN_TOKEN) and --ca-hash are required")
	}
	ks, err := local.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read cluster identity (kube-system UID): %w", err)
	}
	reg := hubclient.Registration{Address: a.cfg.HubAddress, Token: a.cfg.Token, CAHash: a.cfg.CAHash,
		Cluster: a.cfg.Cluster, ClusterUID: string(ks.UID), AgentVersion: a.cfg.Version, Labels: a.cfg.Labels}
	bo := hubclient.Backoff{Initial: time.Second, Max: 30 * time.Second}
	for attempt := 1; ; attempt++ {
		creds, err = hubclient.Register(ctx, reg)
		if err == nil {
			break
		}
		if !hubclient.Retryable(err) || attempt >= 10 {
			return nil, err
		}
		log.Error(err, "Registration failed; retrying", "attempt", attempt)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(bo.Next()):
		}
	}
	if err := store.Save(ctx, creds); err != nil {
		return nil, err
	}
	log.Info("Registered with the hub", "cluster", a.cfg.Cluster, "clusterUID", ks.UID)
	return creds, nil
}
