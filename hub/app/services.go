// SPDX-License-Identifier: Apache-2.0

package app

import (
	"fmt"

	"google.golang.org/grpc"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shoal-dev/shoal/hub/inference"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/models"
	"github.com/shoal-dev/shoal/hub/pools"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/server"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/internal/kubeclient"
)

// apiServices builds the job and queue services (filtered job lists from
// ix, whose Run the caller runs); with a hub management
// cluster (rc not nil) pod templates are checked by a server-side dry-run
// there, and the objects they reference must exist in the member namespace
// (memberNS, the dispatcher's) there.
func apiServices(st *store.Store, rc *rest.Config, memberNS string, ix *jobs.ListIndex) ([]func(grpc.ServiceRegistrar), *jobs.Service, *inference.Service, *pools.Service, *queues.Service, error) {
	opts := []jobs.Option{jobs.WithListIndex(ix)}
	if rc != nil {
		// Every submit makes a dry-run (and reads the objects its template
		// references): client-go's default of 5 requests a second would
		// hold submissions to about five a second per replica.
		cs, err := kubernetes.NewForConfig(kubeclient.Sized(rc, 200, 400))
		if err != nil {
			return nil, nil, nil, nil, nil, fmt.Errorf("hub cluster client: %w", err)
		}
		// Identical templates reuse a verdict for jobs.DefaultVerdictTTL
		// (docs/api.md, "Intake"): pipelines submit thousands of them.
		dry := jobs.NewCachedValidator(jobs.NewDryRunValidator(cs, ""), 0, 0, nil)
		opts = append(opts, jobs.WithTemplateValidator(dry),
			jobs.WithReferenceChecker(jobs.NewKubeReferenceChecker(cs, memberNS)))
	}
	js := jobs.New(st, opts...)
	qs := queues.New(st, js)
	ps := pools.New(st, qs)
	qs.CheckPools(ps.Exists)
	ms := models.New(st, js)
	is := inference.New(st, ms, js)
	return []func(grpc.ServiceRegistrar){server.RegisterJobs(js), server.RegisterQueues(qs), server.RegisterModels(ms),
		server.RegisterInference(is), server.RegisterPools(ps)}, js, is, ps, qs, nil
}

// gitOps builds the leader-elected rollout controller (its Run must be
// started) and the GitOps and Rollouts gRPC services over the registry, the
// only writer of Cluster records.
func gitOps(st *store.Store, reg *registry.Registry, c *Config) (*rollout.Controller, []func(grpc.ServiceRegistrar)) {
	cfg := c.Rollout
	if cfg.Identity == "" {
		cfg.Identity = c.Identity
	}
	ctrl := rollout.NewController(st, reg, cfg)
	return ctrl, []func(grpc.ServiceRegistrar){server.GitOpsService(reg), server.RolloutsService(ctrl)}
}
