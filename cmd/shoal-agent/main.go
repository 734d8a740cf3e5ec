// SPDX-License-Identifier: Apache-2.0

// Command shoal-agent runs in a workload cluster: it registers with the hub,
// reports the cluster's GPU inventory, publishes it as virtual-kubelet nodes
// in the hub management cluster and runs the pods bound to them.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent"
)

// version is set with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	if err := newCommand().Execute(); err != nil {
		klog.ErrorS(err, "shoal-agent failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func newCommand() *cobra.Command {
	opts := defaultOptions()
	cmd := &cobra.Command{
		Use:           "shoal-agent",
		Short:         "Run the Shoal agent of one workload cluster",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
			serveMetrics(ctx, metrics, health)
			return a.Run(ctx)
		},
	}
	opts.addFlags(cmd.Flags())
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	cmd.Flags().AddGoFlagSet(klogFlags)
	cmd.SetContext(context.Background())
	return cmd
}
