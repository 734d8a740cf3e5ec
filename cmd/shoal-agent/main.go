// SPDX-License-Identifier: Apache-2.0

// Command shoal-agent runs in a workload cluster: it registers with the hub,
// reports the cluster's GPU inventory, publishes it as virtual-kubelet nodes
// in the hub management cluster and runs the pods bound to them.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent"
	"github.com/shoal-dev/shoal/internal/logging"
	"github.com/shoal-dev/shoal/internal/tracing"
)

// version is set with -ldflags "-X main.version=…" (make images); `shoal-agent --version` prints it.
var version = "dev"

func main() {
	if err := newCommand().Execute(); err != nil {
		klog.ErrorS(err, "shoal-agent failed")
		logging.Flush()
		os.Exit(1)
	}
	logging.Flush()
}

func newCommand() *cobra.Command {
	opts := defaultOptions()
	logOpts := logging.NewOptions()
	traceOpts := tracing.NewOptions()
	cmd := &cobra.Command{
		Use:           "shoal-agent",
		Short:         "Run the Shoal agent of one workload cluster",
		Version:       version,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := traceOpts.Validate(); err != nil {
				return err
			}
			if err := logOpts.Apply(); err != nil {
				return err
			}
			cfg, err := opts.config()
			if err != nil {
				return err
			}
			a, err := agent.New(cfg)
			if err != nil {
				return err
			}
			metrics, health, err := opts.endpoints.listen(opts.metricsAddr)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ctx = klog.NewContext(ctx, klog.Background().WithName("shoal-agent"))
			stopTracing, err := traceOpts.Start(ctx, "shoal-agent", tracing.KeyCluster.String(cfg.Cluster))
			if err != nil {
				return err
			}
			defer flushTraces(ctx, stopTracing)
			serveMetrics(ctx, metrics, health)
			return a.Run(ctx)
		},
	}
	opts.addFlags(cmd.Flags())
	logOpts.AddFlags(cmd.Flags())
	traceOpts.AddFlags(cmd.Flags())
	cmd.SetContext(context.Background())
	return cmd
}

// flushTraces sends the spans not sent yet and stops the tracer provider,
// within 5 s.
func flushTraces(ctx context.Context, stop func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Flushing traces")
	}
}
