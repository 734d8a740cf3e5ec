// SPDX-License-Identifier: Apache-2.0

package ha_test

import (
	"context"
	"strings"
	"testing"

	"github.com/shoal-dev/shoal/hub/app"
	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/scheduler"
)

// checkOneLeader: the store's hub-leader election and the scheduler's,
// the dispatcher's and the rollouts' own elections all name one identity;
// the running replica whose /readyz?verbose says it holds hub-leader is
// the one whose scheduler-leader and dispatch-synced checks lead. It
// returns that replica.
func checkOneLeader(t *testing.T, ctx context.Context, rs *replicaSet) *replica {
	t.Helper()
	st := openStore(t, ctx, rs)
	id, err := st.Leader(ctx, app.LeaderElection)
	if err != nil {
		t.Fatalf("leader of %s: %v", app.LeaderElection, err)
	}
	for _, e := range []string{scheduler.Election, dispatch.Election, rollout.Election} {
		if who, err := st.Leader(ctx, e); err != nil || who != id {
			t.Errorf("leader of election %s: %q, %v; want %s, the leader of %s", e, who, err, id, app.LeaderElection)
		}
	}
	var lead *replica
	for _, r := range rs.replicas {
		if !r.running() {
			continue
		}
		_, body, err := r.readyz(ctx, true)
		if err == nil && strings.Contains(body, "[+]"+app.CheckHubLeader+" ok: this replica ("+id+") leads") {
			lead = r
		}
	}
	if lead == nil {
		t.Fatalf("no running replica's /readyz?verbose says it is %s", id)
	}
	for _, check := range []string{app.CheckSchedulerLeader, app.CheckDispatchSynced} {
		if r := rs.leader(ctx, check); r != lead {
			t.Errorf("%s: leader %v, want %s, which holds %s", check, r, lead.name, app.LeaderElection)
		}
	}
	t.Logf("%s (%s) leads %s, the scheduler, the dispatcher and the rollouts", lead.name, id, app.LeaderElection)
	return lead
}
