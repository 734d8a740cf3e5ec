package main

import (
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/server"
	"github.com/shoal-dev/shoal/hub/store"
)

// gitOps builds the leader-elected rollout controller (its Run must be
// started) and the GitOps and Rollouts gRPC services over the registry.
func gitOps(st *store.Store, reg *registry.Registry) (*rollout.Controller, []func(grpc.ServiceRegistrar), error) {
	if err := rollout.Register(prometheus.DefaultRegisterer); err != nil {
		return nil, nil, err
	}
	if err := registry.RegisterMetrics(prometheus.DefaultRegisterer); err != nil {
		return nil, nil, err
	}
	id, _ := os.Hostname()
	ctrl := rollout.NewController(st, reg, rollout.Config{Identity: fmt.Sprintf("%s-%d", id, os.Getpid())})
	return ctrl, []func(grpc.ServiceRegistrar){server.GitOpsService(reg), server.RolloutsService(ctrl)}, nil
}
