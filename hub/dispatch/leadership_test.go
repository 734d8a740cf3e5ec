// SPDX-License-Identifier: Apache-2.0

package dispatch_test

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/hub/dispatch"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/store"
)

// campaign wins the dispatcher election on the rig's (embedded etcd)
// store as identity, once the current leader, if any, has resigned.
func (r *rig) campaign(identity string) store.Leadership {
	r.T.Helper()
	l, err := r.Store.Campaign(r.Ctx, dispatch.Election, identity)
	if err != nil {
		r.T.Fatal(err)
	}
	r.T.Cleanup(func() { _ = l.Resign(r.Ctx) })
	return l
}

// TestDeposedDispatcherCannotWrite: a dispatcher whose leadership is lost
// (it resigned and another replica leads; it has not noticed) neither
// writes the job's decision nor creates member pods; the new leader's
// dispatcher does both, and once it is deposed in turn it does not
// recreate a missing member (ErrDeposed).
func TestDeposedDispatcherCannotWrite(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit("llama", 2, 8)
	r.cycle()

	old := r.campaign("a")
	d := r.dispatcher(dispatch.Config{Clock: r.Clock, PrepareTimeout: time.Minute})
	dispatch.Lead(d, old)
	if err := old.Resign(r.Ctx); err != nil {
		t.Fatal(err)
	}
	cur := r.campaign("b")
	r.synced(d)
	if err := d.Pass(r.Ctx); err != nil && !errors.Is(err, store.ErrConflict) {
		t.Fatalf("deposed pass: %v", err)
	}
	if dd := jobs.DispatchOf(r.Job("llama")); dd != nil {
		t.Fatalf("a deposed dispatcher wrote the decision %+v", dd)
	}
	if n := len(r.pods("llama")); n != 0 {
		t.Fatalf("a deposed dispatcher created %d member pods", n)
	}

	dispatch.Lead(d, cur) // the leader's dispatcher
	r.passWith(d)
	if dd := jobs.DispatchOf(r.Job("llama")); dd == nil {
		t.Fatal("the leader's dispatcher wrote no decision")
	}
	pods := r.pods("llama")
	if len(pods) != 2 {
		t.Fatalf("the leader's dispatcher created %d member pods, want 2", len(pods))
	}

	if err := r.hub.CoreV1().Pods(ns).Delete(r.Ctx, pods[0].Name, deleteNow()); err != nil {
		t.Fatal(err)
	}
	if err := cur.Resign(r.Ctx); err != nil {
		t.Fatal(err)
	}
	r.campaign("c")
	r.synced(d)
	if err := d.Pass(r.Ctx); !errors.Is(err, dispatch.ErrDeposed) {
		t.Fatalf("deposed pass with a member missing: %v, want ErrDeposed", err)
	}
	if n := len(r.pods("llama")); n != 1 {
		t.Fatalf("%d member pods after the deposed pass, want the missing one not recreated (1)", n)
	}
}

// deleteNow is a delete with grace 0.
func deleteNow() metav1.DeleteOptions {
	var zero int64
	return metav1.DeleteOptions{GracePeriodSeconds: &zero}
}
