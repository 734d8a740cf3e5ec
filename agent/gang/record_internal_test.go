// SPDX-License-Identifier: Apache-2.0

package gang

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestRecordWritesSavesInFlightTogether: saves asked for while a write of
// the epoch record is in flight are written together by one more write,
// each returns once its entry is stored, and an entry is never lowered.
func TestRecordWritesSavesInFlightTogether(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	var writes atomic.Int32
	release, release2 := make(chan struct{}), make(chan struct{})
	cs.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() == "create" || a.GetVerb() == "update" {
			switch writes.Add(1) {
			case 1:
				<-release // the first write hangs until the others queue
			case 2:
				<-release2 // the second until the first save returned
			}
		}
		return false, nil, nil
	})
	r := &record{namespace: "shoal-system"}
	now := time.Unix(1_000_000, 0)
	var wg sync.WaitGroup
	errs := make(chan error, 21)
	first := make(chan error, 1)
	go func() { first <- r.save(ctx, cs, "ns/first", 1, now) }()
	waitFor(t, func() bool { return writes.Load() == 1 })
	for i := range 20 {
		wg.Go(func() { errs <- r.save(ctx, cs, fmt.Sprintf("ns/job-%d", i), 2, now) })
	}
	waitFor(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.next != nil && len(r.next.entries) == 20
	})
	close(release)
	select { // the save that wrote first does not wait for the writes after it
	case err := <-first:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first save waited for the batch written after it")
	}
	close(release2)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := writes.Load(); n != 2 {
		t.Errorf("%d writes for 21 saves, 20 of them asked during the first write; want 2", n)
	}
	cm, err := cs.CoreV1().ConfigMaps("shoal-system").Get(ctx, EpochsConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.Data) != 21 || cm.Data["ns.first"] != "1 1000000" || cm.Data["ns.job-7"] != "2 1000000" {
		t.Errorf("record %v, want 21 entries", cm.Data)
	}
	if err := r.save(ctx, cs, "ns/job-7", 1, now); err != nil || writes.Load() != 2 {
		t.Errorf("an older epoch: err %v, %d writes; want no write", err, writes.Load())
	}
}

// TestRecordReadsAgainAfterAConflict: the record is written from the copy
// the last write returned; when another writer changed it meanwhile, it is
// read again and both entries are kept.
func TestRecordReadsAgainAfterAConflict(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	r := &record{namespace: "shoal-system"}
	now := time.Unix(1_000_000, 0)
	if err := r.save(ctx, cs, "ns/a", 1, now); err != nil {
		t.Fatal(err)
	}
	var gets atomic.Int32
	cs.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		gets.Add(1)
		return false, nil, nil
	})
	if err := r.save(ctx, cs, "ns/b", 1, now); err != nil {
		t.Fatal(err)
	}
	if gets.Load() != 0 {
		t.Errorf("%d reads for a write from the last copy, want none", gets.Load())
	}
	// Another writer (an older agent run) changes it: the next write conflicts.
	cm, _ := cs.CoreV1().ConfigMaps("shoal-system").Get(ctx, EpochsConfigMap, metav1.GetOptions{})
	gets.Store(0)
	cm.Data["ns.other"] = "3 1000000"
	cm.ResourceVersion = "changed"
	conflicted := false
	cs.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !conflicted {
			conflicted = true
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, EpochsConfigMap, nil)
		}
		return false, nil, nil
	})
	if _, err := cs.CoreV1().ConfigMaps("shoal-system").Update(ctx, cm, metav1.UpdateOptions{}); err == nil {
		t.Fatal("the reactor let the first update through")
	}
	if err := cs.Tracker().Update(corev1.SchemeGroupVersion.WithResource("configmaps"), cm, "shoal-system"); err != nil {
		t.Fatal(err)
	}
	conflicted = false
	if err := r.save(ctx, cs, "ns/c", 2, now); err != nil {
		t.Fatal(err)
	}
	got, _ := cs.CoreV1().ConfigMaps("shoal-system").Get(ctx, EpochsConfigMap, metav1.GetOptions{})
	for _, k := range []string{"ns.a", "ns.b", "ns.c", "ns.other"} {
		if got.Data[k] == "" {
			t.Errorf("record %v lacks %s", got.Data, k)
		}
	}
	if gets.Load() != 2 { // the conflict's read, and this check's
		t.Errorf("%d reads, want the one after the conflict (and this check's)", gets.Load())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}
