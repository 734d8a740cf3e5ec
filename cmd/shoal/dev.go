// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-dev/shoal/internal/devfleet"
)

// newDevCommand returns `shoal dev`: start, stop and inspect a local fleet.
func newDevCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Start, stop and inspect a local multi-cluster GPU fleet",
		Long: "shoal dev runs a hub management cluster and N workload clusters on loopback from the " +
			"binaries `make k8s-bin` builds, with KWOK GPU nodes labelled like NVIDIA GPU Feature Discovery " +
			"labels real ones, then shoal-hub and one registered shoal-agent per workload cluster " +
			"(from `make build`). State, kubeconfigs, the shoal CLI config and logs live in --dir " +
			"($SHOAL_DEV_DIR, default ~/.shoal/dev).",
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", devfleet.DefaultDir(), "fleet directory")
	cmd.AddCommand(newDevUpCommand(&dir), newDevDownCommand(&dir), newDevStatusCommand(&dir),
		newDevKubeconfigCommand(&dir), newDevProfilesCommand(), newDevNodesCommand(&dir), newDevPodCommand(&dir),
		newDevEnvCommand(&dir), newDevLogsCommand(&dir))
	return cmd
}

func newDevUpCommand(dir *string) *cobra.Command {
	opts := devfleet.Options{BasePort: devfleet.DefaultBasePort}
	var noShoal bool
	var realNodes int
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the hub cluster, the workload clusters (one per profile by default), shoal-hub and one agent per cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts.Dir, opts.Out = *dir, cmd.OutOrStdout()
			bar := newProgress(cmd.ErrOrStderr(), "dev up")
			bar.tenths = true
			if bar.tty && isTerminal(cmd.OutOrStdout()) {
				opts.Out = bar.Writer() // the step lines and the bar share the terminal
			}
			opts.Progress = func(done, total int, step string) { bar.Update(done, total, step) }
			defer bar.Finish()
			if !noShoal && !opts.NoHub {
				so, err := devShoalBinaries()
				if err != nil {
					return err
				}
				opts.Shoal = so
			}
			if realNodes > 0 {
				ro, err := devRealNodeOptions(realNodes)
				if err != nil {
					return err
				}
				opts.RealNodes = ro
			}
			f, err := devfleet.Up(ctx, opts)
			if err != nil {
				return err
			}
			devPrintStatus(cmd.Context(), cmd.OutOrStdout(), f)
			fmt.Fprintln(cmd.OutOrStdout())
			devPrintEnv(cmd.OutOrStdout(), f)
			fmt.Fprintf(cmd.OutOrStdout(), "kubectl --context %s get nodes\n", devFirstWorkload(f))
			if f.Shoal != nil {
				fmt.Fprintln(cmd.OutOrStdout(), "shoal cluster list")
			}
			fmt.Fprintln(cmd.OutOrStdout(), "shoal dev down                     # stops everything")
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&opts.Clusters, "clusters", 0, "workload clusters (default: one per profile)")
	fl.StringSliceVar(&opts.Profiles, "profile", devfleet.DefaultProfiles,
		"fleet profiles, given to the workload clusters in turn (see `shoal dev profiles`)")
	fl.IntVar(&opts.Nodes, "nodes", 0, "GPU nodes per workload cluster (default: the profile's, at least 16)")
	fl.IntVar(&opts.BasePort, "base-port", opts.BasePort, "first port; cluster i uses base+10*i..+7 (0: any free ports)")
	fl.BoolVar(&opts.NoHub, "no-hub", false, "start workload clusters only (no hub cluster, no shoal-hub, no agents)")
	fl.BoolVar(&noShoal, "no-shoal", false, "start the Kubernetes clusters only (no shoal-hub, no agents)")
	fl.BoolVar(&opts.ControllerManager, "controller-manager", false,
		"also run every kube-controller-manager controller in the hub cluster (workload clusters always run one)")
	fl.IntVar(&realNodes, "real-nodes", 0, "real kubelet nodes (containerd, runc, bridge CNI, CoreDNS) per workload cluster, "+
		"replacing that many KWOK nodes; needs root (docs/real-nodes.md)")
	fl.BoolVar(&opts.PodStartDelays, "pod-start-delays", false, "keep KWOK's random 2-10 s pod start delays")
	fl.BoolVar(&opts.NativeGang, "native-gang", false, "serve Kubernetes' native gang API (PodGroups, GenericWorkload) in "+
		"the workload clusters: each gang slice is admitted all or nothing by its cluster's kube-scheduler (docs/native-gang.md)")
	return cmd
}

func newDevDownCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop every process `shoal dev up` started and remove the fleet's data (logs stay)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := devfleet.Open(*dir)
			if errors.Is(err, devfleet.ErrNoFleet) {
				fmt.Fprintf(cmd.OutOrStdout(), "no fleet in %s\n", *dir)
				return nil
			}
			if err != nil {
				return err
			}
			start, n := time.Now(), len(f.Processes())
			if err := f.Down(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stopped %d processes of %d clusters in %s (logs in %s)\n",
				n, len(f.Clusters), time.Since(start).Round(time.Millisecond), *dir)
			return nil
		},
	}
}

func newDevKubeconfigCommand(dir *string) *cobra.Command {
	var raw bool
	cmd := &cobra.Command{
		Use:   "kubeconfig [CLUSTER]",
		Short: "Print the path of a cluster's kubeconfig (all clusters when none is named); --raw prints it",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := devfleet.Open(*dir)
			if err != nil {
				return err
			}
			path := f.Kubeconfig
			if len(args) == 1 {
				c := f.Cluster(args[0])
				if c == nil {
					return fmt.Errorf("no cluster %q in the fleet (have: %s)", args[0], devClusterNames(f))
				}
				path = c.Kubeconfig
			}
			if !raw {
				fmt.Fprintln(cmd.OutOrStdout(), path)
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	cmd.Flags().BoolVar(&raw, "raw", false, "print the kubeconfig itself instead of its path")
	return cmd
}

func newDevProfilesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "profiles",
		Short: "List the GPU fleet profiles",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			for _, n := range devfleet.ProfileNames() {
				p, _ := devfleet.LookupProfile(n)
				fmt.Fprintf(cmd.OutOrStdout(), "%-12s %3d nodes  %s\n", n, p.DefaultNodes, p.Description)
			}
		},
	}
}

func devFirstWorkload(f *devfleet.Fleet) string {
	if w := f.Workloads(); len(w) > 0 {
		return w[0].Name
	}
	return "hub"
}
