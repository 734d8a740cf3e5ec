// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// addRolloutCommands adds `shoal rollout create|get|list|pause|resume|abort`.
func addRolloutCommands(root *cobra.Command) {
	cmd := &cobra.Command{Use: "rollout", Short: "Move a GitOps revision across the fleet in waves"}
	cmd.AddCommand(newRolloutCreateCommand(), newRolloutGetCommand(), newRolloutListCommand(), newRolloutStatusCommand())
	for _, verb := range []string{"pause", "resume", "abort"} {
		cmd.AddCommand(newRolloutVerbCommand(verb))
	}
	root.AddCommand(cmd)
}

func rolloutsClient(cmd *cobra.Command) (shoalv1.RolloutsClient, func(), error) {
	conn, err := dialHub(cmd)
	if err != nil {
		return nil, nil, err
	}
	return shoalv1.NewRolloutsClient(conn), func() { _ = conn.Close() }, nil
}

func decodeRollout(o *shoalv1.Object) (*v1alpha1.Rollout, error) {
	var r v1alpha1.Rollout
	if err := json.Unmarshal(o.GetJson(), &r); err != nil {
		return nil, fmt.Errorf("the hub sent a rollout this CLI cannot read (version skew?): %w", err)
	}
	return &r, nil
}

func newRolloutCreateCommand() *cobra.Command {
	var req shoalv1.CreateRolloutRequest
	var soak, waveTimeout, timeout time.Duration
	var output string
	var wait bool
	cmd := &cobra.Command{
		Use:     "create [NAME] --revision SHA [--clusters SELECTOR] [--waves 1,25%,100%] [--soak 5m]",
		Short:   "Pin a commit on the selected clusters wave by wave; halt and roll the wave back when a cluster fails",
		Example: `  shoal rollout create --revision 4f1c0d2e… --clusters env=prod --waves 1,25%,100% --soak 5m`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			if len(args) == 1 {
				req.Name = args[0]
			}
			req.SoakSeconds, req.WaveTimeoutSeconds = int64(soak.Seconds()), int64(waveTimeout.Seconds())
			cl, done, err := rolloutsClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			obj, err := cl.CreateRollout(cmd.Context(), &req)
			if err != nil {
				return outCallError("create rollout", err)
			}
			if err := printRollouts(cmd, output, []*shoalv1.Object{obj}, true); err != nil || !wait {
				return err
			}
			r, err := decodeRollout(obj)
			if err != nil {
				return err
			}
			return waitRolloutFor(cmd, cl, r.Name, timeout)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&req.Revision, "revision", "", "full commit SHA to roll out")
	fl.StringVar(&req.Selector, "clusters", "", "label selector over the clusters (default all with a GitOps source)")
	fl.StringVar(&req.Waves, "waves", "1,25%,100%", "cumulative waves: counts and percentages of the selected clusters")
	fl.DurationVar(&soak, "soak", 5*time.Minute, "how long a wave must stay applied, healthy and Ready before the next")
	fl.DurationVar(&waveTimeout, "wave-timeout", 0, "fail a wave that has not passed this long after it started (default 10m plus the soak)")
	fl.BoolVar(&wait, "wait", false, "wait until the rollout succeeds, showing its progress on stderr (shoal rollout status); fails when it halts")
	fl.DurationVar(&timeout, "timeout", 0, "with --wait: give up after this long (0: no limit)")
	_ = cmd.MarkFlagRequired("revision")
	outFlag(cmd, &output)
	return cmd
}

func newRolloutGetCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a rollout: waves, phase and message",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return rolloutCall(cmd, output, func(cl shoalv1.RolloutsClient, r *shoalv1.RolloutRequest) (*shoalv1.Object, error) {
				return cl.GetRollout(cmd.Context(), r)
			}, args[0], "get", true)
		},
	}
	outFlag(cmd, &output)
	return cmd
}

func newRolloutVerbCommand(verb string) *cobra.Command {
	short := map[string]string{
		"pause":  "Stop a rollout from advancing (pinned clusters stay pinned)",
		"resume": "Continue a paused rollout (the current wave's soak and timeout restart)",
		"abort":  "Halt a rollout and roll its current wave back",
	}[verb]
	var output string
	cmd := &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return rolloutCall(cmd, output, func(cl shoalv1.RolloutsClient, r *shoalv1.RolloutRequest) (*shoalv1.Object, error) {
				switch verb {
				case "pause":
					return cl.PauseRollout(cmd.Context(), r)
				case "resume":
					return cl.ResumeRollout(cmd.Context(), r)
				}
				return cl.AbortRollout(cmd.Context(), r)
			}, args[0], verb, false)
		},
	}
	outFlag(cmd, &output)
	return cmd
}

func rolloutCall(cmd *cobra.Command, output string, call func(shoalv1.RolloutsClient, *shoalv1.RolloutRequest) (*shoalv1.Object, error), name, verb string, detail bool) error {
	if err := outCheck(output); err != nil {
		return err
	}
	cl, done, err := rolloutsClient(cmd)
	if err != nil {
		return err
	}
	defer done()
	obj, err := call(cl, &shoalv1.RolloutRequest{Name: name})
	if err != nil {
		return outCallError(verb+" rollout/"+name, err)
	}
	return printRollouts(cmd, output, []*shoalv1.Object{obj}, detail)
}

func newRolloutListCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List rollouts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			cl, done, err := rolloutsClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			resp, err := cl.ListRollouts(cmd.Context(), &shoalv1.ListRolloutsRequest{})
			if err != nil {
				return outCallError("list rollouts", err)
			}
			return printRollouts(cmd, output, resp.Items, false)
		},
	}
	outFlag(cmd, &output)
	return cmd
}

func printRollouts(cmd *cobra.Command, output string, objs []*shoalv1.Object, detail bool) error {
	var rs []*v1alpha1.Rollout
	for _, o := range objs {
		r, err := decodeRollout(o)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	var v any = outList(rs)
	if len(rs) == 1 && detail {
		v = rs[0]
	}
	if ok, err := outStructured(cmd.OutOrStdout(), output, v); ok {
		return err
	}
	return printRolloutTable(cmd.OutOrStdout(), rs, detail, time.Now())
}

// printRolloutTable writes one row per rollout and, with detail, its waves.
func printRolloutTable(w io.Writer, rs []*v1alpha1.Rollout, detail bool, now time.Time) error {
	t := outTable(w)
	fmt.Fprintln(t, "NAME\tREVISION\tPHASE\tWAVE\tSOAK\tAGE\tMESSAGE")
	for _, r := range rs {
		phase := string(r.Status.Phase)
		if r.Spec.Paused {
			phase += " (paused)"
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", r.Name, shortSHA(r.Spec.Revision), phase, r.Status.Wave+1,
			len(r.Status.Waves), r.Spec.Soak.Duration, outAge(r.CreationTimestamp, now), outDash(r.Status.Message))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if !detail || len(rs) != 1 {
		return nil
	}
	r := rs[0]
	for i, wave := range r.Status.Waves {
		state := "pending"
		switch {
		case i < r.Status.Wave || r.Status.Phase == v1alpha1.RolloutSucceeded:
			state = "passed"
		case i == r.Status.Wave && r.Status.Phase == v1alpha1.RolloutHalted:
			state = "failed, rolled back"
		case i == r.Status.Wave:
			state = "in progress"
		}
		if _, err := fmt.Fprintf(w, "wave %d (%s): %s\n", i+1, state, strings.Join(wave.Clusters, ", ")); err != nil {
			return err
		}
	}
	return nil
}
