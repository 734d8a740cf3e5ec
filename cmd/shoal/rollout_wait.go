// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// rolloutPoll is how often a rollout wait reads the rollout: the hub has
// no rollout watch.
const rolloutPoll = time.Second

// errRolloutHalted is wrapped by waitForRollout's error for a halted rollout.
var errRolloutHalted = errors.New("rollout halted")

func newRolloutStatusCommand() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Wait for a rollout to finish, showing its waves' progress; fails when it halts",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, done, err := rolloutsClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			return waitRolloutFor(cmd, cl, args[0], timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: no limit)")
	return cmd
}

func waitRolloutFor(cmd *cobra.Command, cl shoalv1.RolloutsClient, name string, timeout time.Duration) error {
	ctx := cmd.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return waitForRollout(ctx, cmd.ErrOrStderr(), cl, name, rolloutPoll)
}

// waitForRollout reads the rollout every poll until it succeeded (nil) or
// halted (an error with its message), drawing on w how many of its planned
// clusters have passed: those of the waves before the current one, and the
// current wave's clusters that have met the gate for the whole soak.
func waitForRollout(ctx context.Context, w io.Writer, cl shoalv1.RolloutsClient, name string, poll time.Duration) error {
	p := newProgress(w, "rollout/"+name)
	defer p.Finish()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		obj, err := cl.GetRollout(ctx, &shoalv1.RolloutRequest{Name: name})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("rollout/%s: gave up waiting: %w", name, context.Cause(ctx))
			}
			return outCallError("get rollout/"+name, err)
		}
		r, err := decodeRollout(obj)
		if err != nil {
			return err
		}
		done, total, status := rolloutProgress(r, time.Now())
		p.Update(done, total, status)
		switch r.Status.Phase {
		case v1alpha1.RolloutSucceeded:
			return nil
		case v1alpha1.RolloutHalted:
			return fmt.Errorf("rollout/%s halted: %s: %w", name, r.Status.Message, errRolloutHalted)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rollout/%s: gave up waiting: %w", name, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// rolloutProgress counts the rollout's passed clusters of all planned ones
// and says where it stands.
func rolloutProgress(r *v1alpha1.Rollout, now time.Time) (done, total int, status string) {
	st := &r.Status
	for i, wv := range st.Waves {
		total += len(wv.Clusters)
		if i < st.Wave || st.Phase == v1alpha1.RolloutSucceeded {
			done += len(wv.Clusters)
		}
	}
	switch {
	case st.Phase == v1alpha1.RolloutSucceeded:
		return total, total, "Succeeded"
	case st.Phase == v1alpha1.RolloutHalted:
		return done, total, "Halted: " + st.Message
	case st.Wave >= len(st.Waves):
		return done, total, string(st.Phase)
	}
	wave := st.Waves[st.Wave].Clusters
	good, soaked := 0, 0
	for _, c := range wave {
		if since, ok := st.GoodSince[c]; ok {
			good++
			if now.Sub(since.Time) >= r.Spec.Soak.Duration {
				soaked++
			}
		}
	}
	status = fmt.Sprintf("wave %d/%d: %d/%d clusters healthy, %d soaked %s", st.Wave+1, len(st.Waves), good, len(wave),
		soaked, r.Spec.Soak.Duration)
	if r.Spec.Paused {
		status += " (paused)"
	}
	return done + soaked, total, status
}
