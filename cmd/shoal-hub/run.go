package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/hub/hubcluster"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/server"
	"github.com/shoal-dev/shoal/hub/store"
)

// run starts everything and blocks until ctx ends or a part fails.
func run(ctx context.Context, o *options) error {
	log := klog.FromContext(ctx)
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return fmt.Errorf("create --data-dir: %w", err)
	}
	ca, err := pki.LoadOrCreateCA(filepath.Join(o.dataDir, "pki"))
	if err != nil {
		return err
	}
	serving, err := ca.ServerCertificate(o.serverHosts())
	if err != nil {
		return err
	}
	if err := writeAdminConfig(o, ca); err != nil {
		return err
	}
	st, err := openStore(ctx, o)
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	for _, register := range []func(prometheus.Registerer) error{store.Register, server.RegisterMetrics, jobs.Register} {
		if err := register(prometheus.DefaultRegisterer); err != nil {
			return err
		}
	}
	regCfg := registry.Config{
		Grace: o.clusterGrace, FenceTimeout: o.fenceTimeout, AgentCertValidity: o.agentCertTTL,
		HubAddress: o.advertiseAddress,
	}
	var rc *rest.Config
	if o.kubeconfig != "" {
		if rc, err = clientcmd.BuildConfigFromFlags("", o.kubeconfig); err != nil {
			return fmt.Errorf("--kubeconfig: %w", err)
		}
		regCfg.Credentials = hubcluster.New(rc)
	}
	reg := registry.New(st, ca, regCfg)
	services, err := apiServices(st, rc)
	if err != nil {
		return err
	}
	rollouts, gitopsServices, err := gitOps(st, reg)
	if err != nil {
		return err
	}
	services = append(services, gitopsServices...)
	srv, err := server.New(server.Config{
		Listen: o.listen, HTTPListen: o.httpListen, TLS: ca.ServerTLSConfig(serving),
		Store: st, Registry: reg, Services: services, GitOps: true,
	})
	if err != nil {
		return err
	}
	log.Info("Hub starting", "dataDir", o.dataDir, "embeddedEtcd", st.Embedded(), "advertise", o.advertiseAddress,
		"caHash", ca.Hash(), "hubCluster", o.kubeconfig != "", "adminConfig", o.adminConfig)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Run(gctx) })
	g.Go(func() error { return reg.Run(gctx) })
	g.Go(func() error { return rollouts.Run(gctx) })
	if err := runScheduling(gctx, g, st, rc); err != nil {
		return err
	}
	err = g.Wait()
	log.Info("Hub stopped")
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func openStore(ctx context.Context, o *options) (*store.Store, error) {
	tlsCfg, err := o.etcdTLS()
	if err != nil {
		return nil, err
	}
	return store.Open(ctx, store.Config{
		DataDir:   filepath.Join(o.dataDir, "etcd"),
		Endpoints: o.etcdEndpoints,
		TLS:       tlsCfg,
		Prefix:    o.etcdPrefix,
	})
}

// writeAdminConfig puts the admin identity for this hub into the CLI config
// file as context --admin-context.
func writeAdminConfig(o *options, ca *pki.CA) error {
	if o.adminConfig == "" {
		return nil
	}
	certPEM, keyPEM, err := ca.AdminCertificate()
	if err != nil {
		return err
	}
	cfg, err := pki.LoadClientConfig(o.adminConfig)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("--admin-config: %w", err)
	}
	cfg.SetContext(pki.Context{
		Name: o.adminContext, Hub: o.advertiseAddress,
		CAData: string(ca.CertPEM), CertData: string(certPEM), KeyData: string(keyPEM),
	})
	return cfg.Save(o.adminConfig)
}

// apiServices builds the job and queue services; with a hub management
// cluster (rc not nil) pod templates are checked by a server-side dry-run there.
func apiServices(st *store.Store, rc *rest.Config) ([]func(grpc.ServiceRegistrar), error) {
	var opts []jobs.Option
	if rc != nil {
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		opts = append(opts, jobs.WithTemplateValidator(jobs.NewDryRunValidator(cs, "")))
	}
	js := jobs.New(st, opts...)
	qs := queues.New(st, js)
	return []func(grpc.ServiceRegistrar){server.RegisterJobs(js), server.RegisterQueues(qs)}, nil
}
