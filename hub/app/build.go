// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shoal-dev/shoal/hub/hubcluster"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/server"
	"github.com/shoal-dev/shoal/hub/users"
)

// build makes the registry, the services and the server, and returns
// every loop to run: the server, the registry's liveness loop, the job
// list index, the embedded etcd's defragmentation and the leader-elected
// parts (the retention sweeper runs with the scheduler's) under one leadership (leaderLoop).
func (h *Hub) build(ctx context.Context, rc *rest.Config, serving *pki.Serving) ([]loop, *server.Server, error) {
	c := &h.cfg
	regCfg := registry.Config{
		Grace: c.ClusterGrace, FenceTimeout: c.FenceTimeout, FenceMargin: c.FenceMargin, AgentCertValidity: c.AgentCertValidity,
		HubAddress: c.AdvertiseAddress,
	}
	if rc != nil {
		opts := []hubcluster.Option{hubcluster.WithMemberNamespace(c.Dispatch.Namespace)}
		if c.HubClusterServer != "" {
			opts = append(opts, hubcluster.WithServer(c.HubClusterServer))
		}
		regCfg.Credentials = hubcluster.New(rc, opts...)
	}
	h.reg = registry.New(h.st, h.ca, regCfg)
	ix := jobs.NewListIndex(h.st)
	services, js, is, ps, qs, err := apiServices(h.st, rc, c.Dispatch.Namespace, ix)
	if err != nil {
		return nil, nil, err
	}
	rollouts, gitopsServices := gitOps(h.st, h.reg, c)
	parts, checks, err := schedulingParts(ctx, h.st, c, rc)
	if err != nil {
		return nil, nil, err
	}
	parts = withRetention(parts, js, ix, c.Retention)
	parts = withInference(parts, is, h.reg, newPoolView(qs, ps))
	if parts, err = withPools(parts, ps, h.reg, rc); err != nil {
		return nil, nil, err
	}
	if c.runs(Rollouts) {
		parts = append(parts, leaderPart{legacyElection: rollout.Election, lead: rollouts.Lead})
	}
	scfg := server.Config{
		Listen: c.Listen, HTTPListen: c.HTTPListen, HTTPTLS: c.HTTPTLS, Profiling: c.Profiling, HealthListen: c.HealthListen, RESTListen: c.RESTListen, RESTHandlers: c.RESTHandlers,
		RegisterLimit: c.RegisterLimit, RegisterBurst: c.RegisterBurst, TLS: serving.TLSConfig(),
		Store: h.st, ReadyChecks: append([]server.ReadyCheck{leaderCheck(h.st, c.Identity, primaryElection(parts))}, checks...), Registry: h.reg, Services: append(services, gitopsServices...), GitOps: true,
		Users: users.New(h.st, h.ca, users.WithCertValidity(c.UserCertValidity)), CAPEM: h.ca.BundlePEM(), Jobs: js, Checkpoints: js, Inference: is, Audit: h.audit,
	}
	if c.OIDC.IssuerURL != "" {
		tv, err := users.NewTokenVerifier(c.OIDC)
		if err != nil {
			return nil, nil, err
		}
		scfg.Tokens = tv
	}
	srv, err := server.New(scfg)
	if err != nil {
		return nil, nil, err
	}
	h.srv = srv
	loops := []loop{srv.Run, h.reg.Run, ix.Run, func(ctx context.Context) error { return h.st.RunDefrag(ctx, c.Defrag) }}
	if len(parts) > 0 {
		loops = append(loops, leaderLoop(h.st, c.Identity, parts))
	}
	return loops, srv, nil
}

// hubCluster is the hub management cluster's client config, or nil.
func hubCluster(c *Config) (*rest.Config, error) {
	if c.HubCluster != nil || c.Kubeconfig == "" {
		return c.HubCluster, nil
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("hub cluster kubeconfig: %w", err)
	}
	return rc, nil
}
