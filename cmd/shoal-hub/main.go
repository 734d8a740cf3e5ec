// SPDX-License-Identifier: Apache-2.0

// Command shoal-hub runs the Shoal hub: the gRPC API over TLS, the etcd
// store (embedded by default, external with --etcd-endpoints), the cluster
// registry and its liveness loop, and the health and metrics endpoints.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/hub/app"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		klog.ErrorS(err, "shoal-hub failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func newCommand() *cobra.Command {
	opts := defaultOptions()
	cmd := &cobra.Command{
		Use:           "shoal-hub",
		Short:         "Run the Shoal hub (gRPC API, store, cluster registry)",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.complete(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ctx = klog.NewContext(ctx, klog.Background().WithName("shoal-hub"))
			return app.Run(ctx, opts.cfg)
		},
	}
	opts.addFlags(cmd.Flags())
	cmd.AddCommand(newReissueAdminCommand())
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	cmd.Flags().AddGoFlagSet(klogFlags)
	cmd.SetContext(context.Background())
	return cmd
}
