// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// shared is one embedded etcd for the package's tests (about half a
// second to start); tests use their own queue names.
var shared *store.Store

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "shoal-jobs-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	shared, err = store.Open(ctx, store.Config{DataDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = shared.Close() }()
	code := m.Run()
	if controlPlaneCfg != nil {
		_ = controlPlane.Stop()
	}
	return code
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// services returns a job intake and a queue service on the shared store,
// and creates the named queues.
func services(t testing.TB, opts []jobs.Option, queueNames ...string) (*jobs.Service, *queues.Service) {
	t.Helper()
	js := jobs.New(shared, opts...)
	qs := queues.New(shared, js)
	for _, q := range queueNames {
		obj := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: q}}
		if _, _, err := qs.Create(testCtx(t), obj); err != nil {
			t.Fatalf("create queue %s: %v", q, err)
		}
	}
	return js, qs
}

// uniq returns a name unique to this run, a DNS label.
func uniq(prefix string) string { return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e12) }

// job builds a valid job in queue: 2 members × 8 GPUs.
func job(name, queue string) *v1alpha1.Job {
	return testjob.New(name).Queue(queue).Members(2).GPUs(8).Command("sleep", "60").Obj()
}
