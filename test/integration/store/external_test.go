// SPDX-License-Identifier: Apache-2.0

// Package store_test runs hub/store against a real 3-member etcd cluster
// with TLS and client-certificate authentication, started from the etcd
// binary in the binary cache (`make k8s-bin`).
package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/framework"
	"github.com/shoal-dev/shoal/test/integration/store/etcdcluster"
)

type job struct {
	Queue string `json:"queue"`
	Phase string `json:"phase"`
}

// eventually retries op until it succeeds or 30s pass; it returns how many
// attempts failed. Each attempt gets 5s.
func eventually(t *testing.T, ctx context.Context, what string, op func(context.Context) error) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for failures := 0; ; failures++ {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := op(actx)
		cancel()
		if err == nil {
			return failures
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after 30s: %v", what, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// leaderMember returns the member that currently leads the raft group.
func leaderMember(t *testing.T, ctx context.Context, c *etcdcluster.Cluster) *etcdcluster.Member {
	t.Helper()
	var leader *etcdcluster.Member
	eventually(t, ctx, "find the raft leader", func(ctx context.Context) error {
		tlsCfg, err := c.Certs.ClientTLS()
		if err != nil {
			return err
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), TLS: tlsCfg, Logger: zap.NewNop(), DialTimeout: 5 * time.Second})
		if err != nil {
			return err
		}
		defer func() { _ = cli.Close() }()
		for _, m := range c.Members {
			if !m.Running() {
				continue
			}
			st, err := cli.Status(ctx, m.ClientURL)
			if err != nil {
				return err
			}
			if st.Leader == st.Header.MemberId {
				leader = m
				return nil
			}
		}
		return errors.New("no member is leader")
	})
	return leader
}

func TestExternalClusterSurvivesMemberLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member etcd cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	if err := store.Register(reg); err != nil {
		t.Fatal(err)
	}
	cluster, err := etcdcluster.Start(ctx, filepath.Join(framework.BinDir(), "etcd"), t.TempDir(), 3, etcdcluster.Options{TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Stop()

	certs := cluster.Certs
	noClientCert, err := store.ClientTLS(certs.CAFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := store.Open(ctx, store.Config{Endpoints: cluster.Endpoints(), TLS: noClientCert, DialTimeout: 3 * time.Second}); err == nil {
		_ = s.Close()
		t.Fatal("Open without a client certificate succeeded against --client-cert-auth etcd")
	}
	tlsCfg, err := store.ClientTLS(certs.CAFile, certs.ClientCertFile, certs.ClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(ctx, store.Config{Endpoints: cluster.Endpoints(), TLS: tlsCfg, ElectionTTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if s.Embedded() {
		t.Fatal("store with Endpoints runs an embedded etcd")
	}
	jobs := store.NewCollection(s, "jobs", store.JSONCodec[job]())
	create := func(i int) {
		name := fmt.Sprintf("org/team/job-%03d", i)
		retried := eventually(t, ctx, "create "+name, func(ctx context.Context) error {
			_, err := jobs.Create(ctx, name, job{Queue: "org/team", Phase: "Pending"})
			return err
		})
		if retried > 0 {
			t.Logf("create %s: %d failed attempts", name, retried)
		}
	}
	for i := range 20 {
		create(i)
	}
	listed, err := jobs.List(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	events := jobs.Watch(wctx, listed.Revision)
	lastRev := listed.Revision
	lead, err := s.Campaign(ctx, "scheduler", "hub-a")
	if err != nil {
		t.Fatal(err)
	}

	stopped := leaderMember(t, ctx, cluster)
	t.Logf("stopping raft leader %s", stopped.Name)
	if err := stopped.Stop(); err != nil {
		t.Fatal(err)
	}
	for i := 20; i < 40; i++ {
		create(i)
	}
	checkServing(t, ctx, s, jobs, lead, 40)
	checkEvents(t, events, &lastRev, 20, 40)

	// The stopped member rejoins; then another member goes down.
	if err := stopped.Start(); err != nil {
		t.Fatal(err)
	}
	if err := stopped.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	other := cluster.Members[0]
	if other == stopped {
		other = cluster.Members[1]
	}
	t.Logf("restarted %s, stopping %s", stopped.Name, other.Name)
	if err := other.Stop(); err != nil {
		t.Fatal(err)
	}
	for i := 40; i < 50; i++ {
		create(i)
	}
	checkServing(t, ctx, s, jobs, lead, 50)
	checkEvents(t, events, &lastRev, 40, 50)
	select {
	case <-lead.Done():
		t.Fatal("leadership lost although a quorum stayed up")
	default:
	}
	if err := lead.Resign(ctx); err != nil {
		t.Fatal(err)
	}

	// Quorum lost: the last member has no leader and ends its watches; the
	// store's watch keeps resuming until the quorum is back, then delivers
	// every later change exactly once.
	restarts := watchRestarts(t, reg)
	third := cluster.Members[2]
	if third == stopped || third == other {
		third = cluster.Members[1]
	}
	t.Logf("stopping %s too: no quorum", third.Name)
	if err := third.Stop(); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "watch interrupted by the leader loss", func(context.Context) error {
		if watchRestarts(t, reg) == restarts {
			return errors.New("no watch restart yet")
		}
		return nil
	})
	for _, m := range []*etcdcluster.Member{other, third} {
		if err := m.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 50; i < 60; i++ {
		create(i)
	}
	checkEvents(t, events, &lastRev, 50, 60)
}

// watchRestarts reads shoal_store_watch_restarts_total from reg.
func watchRestarts(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "shoal_store_watch_restarts_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("shoal_store_watch_restarts_total not registered")
	return 0
}

// checkServing reads and writes through the store with one member down.
func checkServing(t *testing.T, ctx context.Context, s *store.Store, jobs *store.Collection[job], lead store.Leadership, want int) {
	t.Helper()
	var names []string
	eventually(t, ctx, "paginated list", func(ctx context.Context) error {
		names = names[:0]
		opts := store.ListOptions{Limit: 7}
		for {
			page, err := jobs.List(ctx, opts)
			if err != nil {
				return err
			}
			for _, it := range page.Items {
				names = append(names, it.Name)
			}
			if page.Continue == "" {
				return nil
			}
			opts.Continue = page.Continue
		}
	})
	if len(names) != want {
		t.Fatalf("listed %d jobs, want %d", len(names), want)
	}
	name := names[len(names)-1]
	var rev int64
	eventually(t, ctx, "get", func(ctx context.Context) (err error) {
		_, rev, err = jobs.Get(ctx, name)
		return err
	})
	var updated int64
	eventually(t, ctx, "update", func(ctx context.Context) (err error) {
		updated, err = jobs.Update(ctx, name, job{Queue: "org/team", Phase: "Running"}, rev)
		return err
	})
	// On a cluster the newest revision is a quorum read: it sees the update
	// just acknowledged, whichever member answers.
	eventually(t, ctx, "newest revision", func(ctx context.Context) error {
		revs, err := store.NewestRevisions(ctx, jobs)
		if err == nil && revs[0] != updated { // a stale answer is a failure, not retried
			t.Errorf("newest revision %d, want %d (the update)", revs[0], updated)
		}
		return err
	})
	eventually(t, ctx, "stale update", func(ctx context.Context) error {
		if _, err := jobs.Update(ctx, name, job{Phase: "Lost"}, rev); !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("stale update: %v, want ErrConflict", err)
		}
		return nil
	})
	eventually(t, ctx, "leader txn", func(ctx context.Context) error {
		_, err := s.Txn(ctx).If(lead.Held()).Then(jobs.PutOp(name, job{Queue: "org/team", Phase: "Scheduled"})).Commit()
		return err
	})
}

// checkEvents expects Added events for jobs from..to-1, skipping the
// Modified events of checkServing, with revisions growing past *last.
func checkEvents(t *testing.T, events <-chan store.WatchEvent[job], last *int64, from, to int) {
	t.Helper()
	for i := from; i < to; {
		select {
		case ev, ok := <-events:
			if !ok || ev.Type == store.Error {
				t.Fatalf("watch ended: %+v", ev)
			}
			if ev.Revision <= *last {
				t.Fatalf("event revision %d after %d: duplicate or out of order", ev.Revision, *last)
			}
			*last = ev.Revision
			if ev.Type != store.Added {
				continue
			}
			if want := fmt.Sprintf("org/team/job-%03d", i); ev.Name != want {
				t.Fatalf("Added %s, want %s", ev.Name, want)
			}
			i++
		case <-time.After(30 * time.Second):
			t.Fatalf("no watch event for job %d within 30s", i)
		}
	}
}
