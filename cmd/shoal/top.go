// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

func newTopCommand() *cobra.Command {
	var interval time.Duration
	var iterations int
	var once bool
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Show the fleet, its clusters and queues at a glance, refreshed every --interval (like top)",
		Long: "Reads the clusters, queues and jobs from the hub every --interval and redraws one screen: " +
			"fleet GPUs by state, per cluster its state, GPUs, use, jobs and heartbeat age, per queue its " +
			"nominal quota, use and waiting jobs. On a terminal the screen is redrawn in place; elsewhere " +
			"each reading is printed after the last. --once (or -n 1) prints one reading and exits, for scripts.",
		Example: "  shoal top\n  shoal top --interval 5s\n  shoal top --once",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if once {
				iterations = 1
			}
			if interval <= 0 {
				return fmt.Errorf("--interval must be positive, not %s", interval)
			}
			if iterations < 0 {
				return fmt.Errorf("-n/--iterations must be 0 (until interrupted) or more, not %d", iterations)
			}
			conn, err := dialHub(cmd)
			if err != nil {
				return err
			}
			defer func() { _ = conn.Close() }()
			api := topAPI{clusters: shoalv1.NewClustersClient(conn), queues: shoalv1.NewQueuesClient(conn), jobs: shoalv1.NewJobsClient(conn)}
			hctx, err := currentContext()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			out := cmd.OutOrStdout()
			return runTop(ctx, out, api, hctx.Hub, interval, iterations, isTerminal(out))
		},
	}
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "time between readings")
	cmd.Flags().IntVarP(&iterations, "iterations", "n", 0, "readings to show before exiting (0: until interrupted)")
	cmd.Flags().BoolVar(&once, "once", false, "show one reading and exit (-n 1)")
	return cmd
}

// runTop reads and prints the fleet iterations times (0: until ctx ends),
// every interval. On a terminal each screen replaces the last; otherwise
// the screens follow each other. An interrupt ends it without error.
func runTop(ctx context.Context, w io.Writer, api topAPI, hub string, interval time.Duration, iterations int, tty bool) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for i := 0; iterations == 0 || i < iterations; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
		s, err := api.read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		var screen bytes.Buffer
		if err := printTop(&screen, s, hub, time.Now()); err != nil {
			return err
		}
		switch {
		case tty:
			fmt.Fprint(w, "\033[H\033[2J")
		case i > 0:
			fmt.Fprintln(w)
		}
		if _, err := w.Write(screen.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
