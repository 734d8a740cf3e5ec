// SPDX-License-Identifier: Apache-2.0

// Command shoal-hub runs the Shoal hub: the gRPC API over TLS, the etcd
// store (embedded by default, external with --etcd-endpoints), the cluster
// registry and its liveness loop, and the health and metrics endpoints.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/hub/app"
	"github.com/shoal-dev/shoal/internal/logging"
	"github.com/shoal-dev/shoal/internal/tracing"
)

// version is set with -ldflags "-X main.version=…" (make images); `shoal-hub --version` prints it.
var version = "dev"

func main() {
	if err := newCommand().Execute(); err != nil {
		klog.ErrorS(err, "shoal-hub failed")
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
		Use:           "shoal-hub",
		Short:         "Run the Shoal hub (gRPC API, store, cluster registry)",
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
			if err := opts.complete(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ctx = klog.NewContext(ctx, klog.Background().WithName("shoal-hub"))
			stopTracing, err := traceOpts.Start(ctx, "shoal-hub")
			if err != nil {
				return err
			}
			defer flushTraces(ctx, stopTracing)
			return app.Run(ctx, opts.cfg)
		},
	}
	opts.addFlags(cmd.Flags())
	cmd.AddCommand(newReissueAdminCommand(), newRotateCACommand(), newAdminConfigCommand())
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
