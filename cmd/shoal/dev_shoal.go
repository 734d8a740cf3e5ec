// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/internal/images"
)

// devShoalBinaries finds shoal-hub and shoal-agent next to the running shoal
// executable (bin/ after `make build`), else on PATH.
func devShoalBinaries() (*devfleet.ShoalOptions, error) {
	dirs := devBinaryDirs()
	hub, err := devFindBinary("shoal-hub", dirs)
	if err != nil {
		return nil, err
	}
	agent, err := devFindBinary("shoal-agent", dirs)
	if err != nil {
		return nil, err
	}
	// shoal-gitserver is optional: without it the fleet runs without GitOps.
	git, _ := devFindBinary("shoal-gitserver", dirs)
	return &devfleet.ShoalOptions{HubBinary: hub, AgentBinary: agent, GitServerBinary: git}, nil
}

// devBinaryDirs is where the programs `make build` puts next to the running
// shoal executable are looked for first.
func devBinaryDirs() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return []string{filepath.Dir(exe)}
}

// devFindBinary returns the first executable called name in dirs, else on PATH.
func devFindBinary(name string, dirs []string) (string, error) {
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %s is neither next to shoal (%v) nor on PATH: run `make build` "+
			"(or `shoal dev up --no-shoal` for the Kubernetes clusters only)", devfleet.ErrMissingShoalBinaries, name, dirs)
	}
	return filepath.Abs(p)
}

// devPrintShoal writes the hub and agent lines of `shoal dev status`.
func devPrintShoal(ctx context.Context, out io.Writer, f *devfleet.Fleet) {
	if f.Shoal == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	states, err := f.ClusterStates(ctx)
	hubLine := "not reachable"
	if err == nil {
		hubLine = fmt.Sprintf("serving, %d clusters registered", len(states))
	}
	nodes := map[string]int{}
	if cs, cerr := f.Hub().Clientset(); cerr == nil {
		nodes, _ = devfleet.VirtualNodes(ctx, cs)
	}
	fmt.Fprintln(out)
	for _, c := range f.Clusters {
		for _, p := range c.Processes {
			switch p.Name {
			case devfleet.HubProcess:
				fmt.Fprintf(out, "shoal-hub    %-10s %s  %s at %s\n", devPid(p), devMib(p.RSS()), hubLine, f.Shoal.Address)
			case devfleet.AgentProcess:
				state := states[c.Name]
				if state == "" {
					state = "not registered"
				}
				fmt.Fprintf(out, "shoal-agent  %-10s %s  %-12s %s, %d virtual node(s) on the hub\n",
					devPid(p), devMib(p.RSS()), c.Name, state, nodes[c.Name])
			case devfleet.GitServerProcess:
				if g := f.Shoal.GitOps; g != nil {
					fmt.Fprintf(out, "git server   %-10s %s  fleet repository %s (branch %s)\n", devPid(p), devMib(p.RSS()), g.Repo, g.Branch)
				}
			}
		}
	}
}

func devPid(p *devfleet.Process) string {
	if !p.Alive() {
		return "exited"
	}
	return fmt.Sprintf("pid %d", p.Pid)
}

// devPrintEnv writes the exports that point kubectl and shoal at the fleet.
func devPrintEnv(out io.Writer, f *devfleet.Fleet) {
	fmt.Fprintf(out, "export KUBECONFIG=%s   # one context per cluster\n", f.Kubeconfig)
	if f.Shoal != nil {
		fmt.Fprintf(out, "export SHOAL_CONFIG=%s   # the shoal CLI's admin identity for this hub\n", f.Shoal.Config)
		if f.Shoal.REST != "" {
			fmt.Fprintf(out, "export %s=%s   # the hub's REST face; shoal ui opens the web fleet view\n", uiRESTEnv, f.Shoal.REST)
		}
		if g := f.Shoal.GitOps; g != nil {
			fmt.Fprintf(out, "export SHOAL_FLEET_REPO=%s   # the fleet's Git repository (unauthenticated, dev only)\n", g.Repo)
		}
	}
}

func newDevEnvCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "env",
		Short: "Print the exports for kubectl and shoal: eval \"$(shoal dev env)\"",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := devfleet.Open(*dir)
			if err != nil {
				return err
			}
			devPrintEnv(cmd.OutOrStdout(), f)
			return nil
		},
	}
}

// devRealNodeOptions finds the programs real nodes run (shoal-pause,
// shoal-deviceplugin, and shoal-rendezvous and shoal-trainer for their
// images) like devShoalBinaries.
func devRealNodeOptions(perCluster int) (*devfleet.RealNodeOptions, error) {
	dirs := devBinaryDirs()
	found := map[string]string{}
	for _, b := range []string{"shoal-pause", "shoal-deviceplugin", "shoal-rendezvous", "shoal-trainer"} {
		p, err := devFindBinary(b, dirs)
		if err != nil {
			return nil, err
		}
		found[b] = p
	}
	o := devfleet.NewRealNodeOptions(perCluster, found["shoal-pause"], found["shoal-deviceplugin"], found["shoal-rendezvous"])
	o.Images = append(o.Images, images.Spec{Ref: devfleet.TrainerImage, Binary: found["shoal-trainer"]})
	return o, nil
}
