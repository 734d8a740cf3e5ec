package main

import (
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/server"
	"github.com/shoal-dev/shoal/hub/store"
)

// gitOps builds the clusters' GitOps fleet, the leader-elected rollout
// controller (its Run must be started) and their gRPC services.
func gitOps(st *store.Store) (*rollout.Fleet, *rollout.Controller, []func(grpc.ServiceRegistrar), error) {
	if err := rollout.Register(prometheus.DefaultRegisterer); err != nil {
		return nil, nil, nil, err
	}
	id, _ := os.Hostname()
	fleet := rollout.NewFleet(st, nil)
	ctrl := rollout.NewController(st, fleet, rollout.Config{Identity: fmt.Sprintf("%s-%d", id, os.Getpid())})
	return fleet, ctrl, []func(grpc.ServiceRegistrar){server.GitOpsService(fleet), server.RolloutsService(ctrl)}, nil
}
