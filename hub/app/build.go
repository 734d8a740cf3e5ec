// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"crypto/tls"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shoal-dev/shoal/hub/hubcluster"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/server"
	"github.com/shoal-dev/shoal/hub/users"
)

// build makes the registry, the services and the server, and returns
// every loop to run: the server, the registry's liveness loop and the
// leader-elected loops.
func (h *Hub) build(ctx context.Context, rc *rest.Config, serving tls.Certificate) ([]loop, *server.Server, error) {
	c := &h.cfg
	regCfg := registry.Config{
		Grace: c.ClusterGrace, FenceTimeout: c.FenceTimeout, AgentCertValidity: c.AgentCertValidity,
		HubAddress: c.AdvertiseAddress,
	}
	if rc != nil {
		regCfg.Credentials = hubcluster.New(rc, hubcluster.WithMemberNamespace(c.Dispatch.Namespace))
	}
	h.reg = registry.New(h.st, h.ca, regCfg)
	services, js, err := apiServices(h.st, rc, c.Dispatch.Namespace)
	if err != nil {
		return nil, nil, err
	}
	rollouts, gitopsServices := gitOps(h.st, h.reg, c)
	srv, err := server.New(server.Config{
		Listen: c.Listen, HTTPListen: c.HTTPListen, HTTPTLS: c.HTTPTLS, HealthListen: c.HealthListen,
		RegisterLimit: c.RegisterLimit, RegisterBurst: c.RegisterBurst, TLS: h.ca.ServerTLSConfig(serving),
		Store: h.st, Registry: h.reg, Services: append(services, gitopsServices...), GitOps: true,
		Users: users.New(h.st, h.ca), CAPEM: h.ca.CertPEM, Jobs: js, Audit: h.audit,
	})
	if err != nil {
		return nil, nil, err
	}
	loops := []loop{srv.Run, h.reg.Run}
	if c.runs(Rollouts) {
		loops = append(loops, rollouts.Run)
	}
	scheduling, err := schedulingLoops(ctx, h.st, c, rc)
	if err != nil {
		return nil, nil, err
	}
	return append(loops, scheduling...), srv, nil
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
