// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/hubtest"
)

// TestReservationNamesFollowTheStore: the set lists the reservations there
// are, then follows their creation and deletion; a job is queued only once
// the set has its reservation's change, so the reconcile the change starts
// reads it. Until the first list, and once leadership ends, every job may
// hold one.
func TestReservationNamesFollowTheStore(t *testing.T) {
	e := hubtest.New(t)
	res := store.NewCollection(e.Store, ledger.Kind, store.JSONCodec[*ledger.Reservation]())
	if _, err := res.Create(e.Ctx, "before", &ledger.Reservation{Job: "before"}); err != nil {
		t.Fatal(err)
	}
	d := &Dispatcher{ledger: ledger.New(e.Store)}
	names := &reservationNames{}
	if !names.mayHave("anything") {
		t.Fatal("a set not listed yet says a job holds no reservation")
	}
	from, err := e.Store.Revision(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var queued []string
	// What the set said of each job as it was queued.
	had := map[string]bool{}
	add := func(job string) {
		mu.Lock()
		defer mu.Unlock()
		queued = append(queued, job)
		had[job] = names.mayHave(job)
	}
	ctx, cancel := context.WithCancel(e.Ctx)
	done := make(chan struct{})
	go func() { defer close(done); d.followReservations(ctx, names, from, add, func() {}) }()
	until := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(e.Ctx, 5*time.Millisecond, 10*time.Second, true,
			func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	until("the list", func() bool { return names.mayHave("before") && !names.mayHave("never") })
	if _, err := res.Create(e.Ctx, "placed", &ledger.Reservation{Job: "placed"}); err != nil {
		t.Fatal(err)
	}
	until("placed queued", func() bool { mu.Lock(); defer mu.Unlock(); return len(queued) == 1 })
	if !had["placed"] || queued[0] != "placed" {
		t.Fatalf("queued %v; the set had placed's reservation when it was queued: %v", queued, had["placed"])
	}
	if err := res.Delete(e.Ctx, "before", 0); err != nil {
		t.Fatal(err)
	}
	until("before queued", func() bool { mu.Lock(); defer mu.Unlock(); return len(queued) == 2 })
	if had["before"] || names.mayHave("before") {
		t.Fatal("a deleted reservation is still in the set")
	}
	if names.mayHave("never") || !names.mayHave("placed") {
		t.Fatal("the set lost track")
	}
	cancel()
	<-done
	if !names.mayHave("never") {
		t.Fatal("the set of a leadership that ended still says a job holds no reservation")
	}
}
