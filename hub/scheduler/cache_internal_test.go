// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"

	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/hubtest"
)

// TestCacheListsAgainAfterCompaction: a cache whose watch must resume from
// a compacted revision lists again and so misses no change.
func TestCacheListsAgainAfterCompaction(t *testing.T) {
	e := hubtest.New(t)
	s := New(e.Store, Config{Clock: e.Clock})
	c := s.newCaches()
	if err := c.jobs.sync(e.Ctx); err != nil {
		t.Fatal(err)
	}
	listedAt := c.jobs.revision()
	e.Submit("after-list", 1, 8)
	e.Submit("after-list-2", 1, 8) // the compaction passes the watch's first revision
	rev, err := e.Store.Revision(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.Compact(e.Ctx, rev); err != nil {
		t.Fatal(err)
	}
	// The watch from the list's revision cannot resume.
	fctx, cancel := context.WithTimeout(e.Ctx, 10*time.Second)
	err = c.jobs.follow(fctx)
	cancel()
	if !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("follow from compacted revision %d: %v, want ErrCompacted", listedAt, err)
	}
	before := testutil.ToFloat64(cacheRelists.WithLabelValues("jobs"))
	ctx, stop := context.WithCancel(e.Ctx)
	defer stop()
	done := make(chan struct{})
	go func() { defer close(done); c.jobs.run(ctx, func() {}) }()
	if err := c.jobs.waitFor(e.Ctx, rev, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c.jobs.mu.RLock()
	_, ok := c.jobs.items["after-list"]
	_, active := c.index.active["after-list"]
	c.jobs.mu.RUnlock()
	if !ok || !active {
		t.Fatalf("the job submitted after the list is not cached (cached %v, active %v)", ok, active)
	}
	if got := testutil.ToFloat64(cacheRelists.WithLabelValues("jobs")); got != before+1 {
		t.Fatalf("relists %v, want %v", got, before+1)
	}
	// It follows the watch again from the new list.
	e.Submit("after-relist", 1, 8)
	rev, _ = e.Store.Revision(e.Ctx)
	if err := c.jobs.waitFor(e.Ctx, rev, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	stop()
	<-done
}

// TestCacheRelistOnDemand: relist ends the running watch and the cache
// lists again, then keeps following.
func TestCacheRelistOnDemand(t *testing.T) {
	e := hubtest.New(t)
	c := New(e.Store, Config{Clock: e.Clock}).newCaches()
	ctx, stop := context.WithCancel(e.Ctx)
	defer stop()
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); c.jobs.run(ctx, func() { close(ready) }) }()
	<-ready
	before := testutil.ToFloat64(cacheRelists.WithLabelValues("jobs"))
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(cacheRelists.WithLabelValues("jobs")) == before {
		c.jobs.relist() // the watch may not have started yet: ask again
		if time.Now().After(deadline) {
			t.Fatal("relist did not make the cache list again")
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.Submit("after-relist", 1, 8)
	rev, err := e.Store.Revision(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.jobs.waitFor(e.Ctx, rev, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	stop()
	<-done
}

// TestCachedJobKeepsWhatPlacementReads: the cache decodes an unfinished job
// without its pod templates but with what GangOf reads of them (the
// tolerations and deadline, of the job and of each role), so the gang is
// the one of the whole job. It keeps every annotation but the spec's hash
// (and no map when that was the only one).
func TestCachedJobKeepsWhatPlacementReads(t *testing.T) {
	deadline, short := int64(600), int64(300)
	tol := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml", Effect: corev1.TaintEffectNoSchedule}
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{tol}, ActiveDeadlineSeconds: &deadline,
		Containers: []corev1.Container{{Name: "train", Image: "trainer:1", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}}}}
	for name, j := range map[string]*v1alpha1.Job{
		"gang": {ObjectMeta: metav1.ObjectMeta{Name: "g", Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{v1alpha1.AnnotationSpecHash: "abc", v1alpha1.AnnotationPreemptedBy: "big"}},
			Spec: v1alpha1.JobSpec{Queue: "q", Gang: v1alpha1.Gang{Members: 4, GPUsPerMember: 8}, Template: tmpl}},
		"roles": {ObjectMeta: metav1.ObjectMeta{Name: "r", Annotations: map[string]string{v1alpha1.AnnotationSpecHash: "abc"}},
			Spec: v1alpha1.JobSpec{Queue: "q", Roles: []v1alpha1.Role{
				{Name: "worker", Members: 2, GPUsPerMember: 8, Template: tmpl},
				{Name: "launcher", Members: 1, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{ActiveDeadlineSeconds: &short,
					Containers: []corev1.Container{{Name: "l", Image: "launcher:1"}}}}}}}},
	} {
		t.Run(name, func(t *testing.T) {
			j.Status = v1alpha1.JobStatus{Phase: v1alpha1.JobPlaced, Epoch: 3,
				Placement: &v1alpha1.PlacementStatus{Clusters: []string{"eu1"}},
				Members:   []v1alpha1.MemberStatus{{Index: 0, Cluster: "eu1", Node: "n1"}}}
			b, err := json.Marshal(j)
			if err != nil {
				t.Fatal(err)
			}
			c, err := jobCodec{}.Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
			got, want := GangOf(c.job), GangOf(j)
			if got.Members != want.Members || got.GPUsPerMember != want.GPUsPerMember || got.Estimate != want.Estimate ||
				got.Estimate == 0 || !equality.Semantic.DeepEqual(got.Tolerations, want.Tolerations) ||
				!equality.Semantic.DeepEqual(got.Roles, want.Roles) {
				t.Fatalf("gang of the cached job\n%+v\nwant\n%+v", got, want)
			}
			if len(c.job.Spec.Template.Spec.Containers) != 0 {
				t.Fatal("the cached job keeps its containers")
			}
			for _, r := range c.job.Spec.Roles {
				if len(r.Template.Spec.Containers) != 0 {
					t.Fatalf("role %s keeps its containers", r.Name)
				}
			}
			if c.job.Status.Members != nil || c.job.Status.Placement != nil || c.job.Status.Epoch != 3 {
				t.Fatalf("cached status %+v keeps the members or placement, or lost the epoch", c.job.Status)
			}
			if !maps.Equal(c.job.Labels, j.Labels) || c.job.Spec.Queue != "q" {
				t.Fatalf("cached job %+v lost its metadata or spec", c.job)
			}
			wantAnn := maps.Clone(j.Annotations)
			delete(wantAnn, v1alpha1.AnnotationSpecHash)
			if len(wantAnn) == 0 {
				wantAnn = nil
			}
			if !reflect.DeepEqual(c.job.Annotations, wantAnn) {
				t.Fatalf("cached annotations %v, want %v (all but the spec's hash)", c.job.Annotations, wantAnn)
			}
		})
	}
}

// TestCacheIsCurrentOnlyToWholeTransactions: a transaction's writes reach
// the cache one event at a time; the cache says it is current to their
// revision only once it holds all of them. A cycle that waited for its
// last booking's revision and found only part of that transaction's
// reservations booked their GPUs again (docs/scale.md, session 30).
func TestCacheIsCurrentOnlyToWholeTransactions(t *testing.T) {
	e := hubtest.New(t)
	type rec struct{ N int }
	const kind = "txncache"
	coll := store.NewCollection(e.Store, kind, store.JSONCodec[*rec]())
	c := newWatched(store.NewReader(e.Store, kind, store.JSONCodec[*rec]()))

	// apply: part of a revision leaves the cache where it was.
	at := func(name string, rev int64, more bool) store.WatchEvent[*rec] {
		return store.WatchEvent[*rec]{Type: store.Added, Name: name, Object: &rec{}, Revision: rev, More: more}
	}
	c.apply([]store.WatchEvent[*rec]{at("a", 7, false), at("b", 8, true), at("c", 8, true)})
	if got := c.revision(); got != 7 {
		t.Fatalf("after part of revision 8: current to %d, want 7", got)
	}
	c.apply([]store.WatchEvent[*rec]{at("d", 8, false)})
	if got := c.revision(); got != 8 {
		t.Fatalf("after all of revision 8: current to %d, want 8", got)
	}

	// follow: whenever the cache reaches a transaction's revision, it
	// holds every write of it.
	c = newWatched(store.NewReader(e.Store, kind, store.JSONCodec[*rec]()))
	if err := c.sync(e.Ctx); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(e.Ctx)
	defer stop()
	done := make(chan struct{})
	go func() { defer close(done); c.run(ctx, func() {}) }()
	const txns, per = 40, 30
	for i := range txns {
		var ops []store.Op
		for k := range per {
			ops = append(ops, coll.PutOp(fmt.Sprintf("t%03d-%02d", i, k), &rec{N: k}))
		}
		rev, err := e.Store.Txn(e.Ctx).Then(ops...).Commit()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.waitFor(e.Ctx, rev, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		c.mu.RLock()
		n := len(c.items)
		c.mu.RUnlock()
		if want := (i + 1) * per; n < want {
			t.Fatalf("transaction %d: the cache is current to its revision %d with %d items, want %d", i, rev, n, want)
		}
	}
	stop()
	<-done
}
