// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/hub/server"
	"github.com/shoal-dev/shoal/hub/store"
)

// LeaderElection is the one election of the hub's leader: the replica that
// leads it runs the scheduler, the dispatcher and the rollouts controller,
// all their writes guarded by this leadership.
const LeaderElection = "hub-leader"

// CheckHubLeader names the readiness check that says which replica leads
// LeaderElection; a follower is ready.
const CheckHubLeader = "hub-leader"

// leaderPart is a leader-elected part of the hub: its term under the shared
// leadership, and the election it campaigned in alone before
// LeaderElection (which the leader still wins, so that no older replica
// leads the part at the same time during a rolling upgrade).
type leaderPart struct {
	legacyElection string
	lead           store.LeaderFunc
}

// allParts is how many leader-elected parts a replica that disables none
// runs: the scheduler, the dispatcher and the rollouts controller.
const allParts = 3

// primaryElection is the election whose leader runs these parts:
// LeaderElection for a replica that runs them all, as every production
// replica does. A replica that runs only some (Config.Disable: the
// end-to-end suite runs the scheduler and the dispatcher as separate
// replicas, to stop one while the other goes on) campaigns in an election
// of its own set, "hub-leader/dispatch" say, so it does not wait behind a
// replica of another set; two replicas never run the same part at once
// because each also wins the part's own election.
func primaryElection(parts []leaderPart) string {
	if len(parts) == 0 || len(parts) >= allParts { // an API-only replica reports the hub's leader
		return LeaderElection
	}
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.legacyElection
	}
	return LeaderElection + "/" + strings.Join(names, "+")
}

// leaderLoop campaigns as identity in the parts' primary election and then
// in their legacy elections, and runs every part while it leads them all.
func leaderLoop(st *store.Store, identity string, parts []leaderPart) loop {
	elections := []string{primaryElection(parts)}
	for _, p := range parts {
		elections = append(elections, p.legacyElection)
	}
	fn := leadAll(parts)
	return func(ctx context.Context) error {
		ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("leader"))
		return st.RunElectedAll(ctx, identity, fn, elections...)
	}
}

// leadAll runs every part's term under one leadership. A part that fails
// ends the others' terms, so that the leader resigns and a standby takes
// every part over together; the term ends when every part has returned.
func leadAll(parts []leaderPart) store.LeaderFunc {
	return func(ctx context.Context, l store.Leadership) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errs := make(chan error, len(parts))
		for _, p := range parts {
			go func() { errs <- p.lead(ctx, l) }()
		}
		var all []error
		for range parts {
			if err := <-errs; err != nil {
				all = append(all, err)
				cancel()
			}
		}
		return errors.Join(all...)
	}
}

// leaderCheck is the CheckHubLeader check: it names the replica that
// leads election (primaryElection of the replica's parts).
func leaderCheck(st *store.Store, identity, election string) server.ReadyCheck {
	return server.ReadyCheck{Name: CheckHubLeader, Check: func(ctx context.Context) (string, error) {
		who, err := st.Leader(ctx, election)
		switch {
		case errors.Is(err, store.ErrNoLeader):
			return "no leader elected", nil
		case err != nil:
			return "", err
		case who == identity:
			return fmt.Sprintf("this replica (%s) leads", who), nil
		}
		return fmt.Sprintf("%s leads", who), nil
	}}
}
