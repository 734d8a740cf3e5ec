// SPDX-License-Identifier: Apache-2.0

package ha_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/builders/testjob"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// The workload: gangs that run (3 members of 1 GPU: 60 of the fleet's 64
// GPUs), one every 700 ms, and submissions into a queue whose quota is zero, so that they
// stay queued and the fleet needs no room for them.
const (
	gangs, gangMembers       = 20, 3
	submitters, perSubmitter = 8, 125 // 1,000 submissions
	gangQueue, parkedQueue   = "ha", "parked"
)

// TestLeaderSIGKILL: three replicas share one CA through the store; the
// replica that leads scheduling and dispatch is killed with SIGKILL while
// gangs are being dispatched and jobs submitted (clients retry on another
// replica when one is Unavailable). Afterwards no acknowledged job is lost
// or duplicated, no gang is partial, no GPU is booked twice, and the time
// from the kill to the new leader's first booking is logged.
func TestLeaderSIGKILL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rs := startReplicaSet(t, ctx, 3, fleet.Hub().Kubeconfig)
	a := dialReplicas(t, rs)
	checkOneCA(t, a, rs)
	startAgents(t, ctx, a, rs.lb.Addr())
	for _, q := range []*v1alpha1.Queue{testqueue.New(gangQueue).Obj(),
		testqueue.New(parkedQueue).Quota("h100", 0).BorrowingLimit("h100", 0).Obj()} {
		if err := a.createQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	lead := rs.replicas[0]
	for _, check := range []string{"scheduler-leader", "dispatch-synced"} {
		if r := rs.leader(ctx, check); r != lead {
			t.Fatalf("%s: leader %v, want %s (started first)", check, r, lead.name)
		}
	}
	if r := checkOneLeader(t, ctx, rs); r != lead {
		t.Fatalf("one leader %s, want %s (started first)", r.name, lead.name)
	}

	w := newWorkload(a)
	obs := newObserver(a)
	go obs.run(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { w.submitGangs(ctx, t) })
	for c := range submitters {
		wg.Go(func() { w.submitParked(ctx, t, c) })
	}
	// Kill the leader while submissions are in flight and gangs are being
	// dispatched: at least 5 placed (some of them starting), at least 5
	// still to come.
	eventually(t, ctx, time.Minute, "submissions and dispatch under way", func(context.Context) error {
		running, placed := obs.counts()
		if n := w.ackedN.Load(); n < 200 || placed < 5 || placed > gangs-5 {
			return fmt.Errorf("%d acknowledged, %d gangs placed, %d running", n, placed, running)
		}
		return nil
	})
	runningBefore, placedBefore := obs.counts()
	ackedBefore := w.ackedN.Load()
	killed := time.Now()
	lead.kill()
	t.Logf("SIGKILL to %s (leader of scheduling and dispatch) after %d acknowledged submissions; %d of %d gangs placed, %d of them running",
		lead.name, ackedBefore, placedBefore, gangs, runningBefore)
	obs.markKill(killed)
	leaders := watchLeaders(ctx, rs, killed)

	wg.Wait()
	if t.Failed() {
		return
	}
	if after := w.ackedN.Load() - ackedBefore; after == 0 {
		t.Fatal("every submission was acknowledged before the kill: none was in flight")
	} else {
		t.Logf("%d submissions acknowledged after the kill, by the surviving replicas", after)
	}
	eventually(t, ctx, 90*time.Second, "every gang Running", func(ctx context.Context) error {
		js, err := a.listJobs(ctx, gangQueue)
		if err != nil {
			return err
		}
		n := 0
		for _, j := range js {
			if j.Status.Phase == v1alpha1.JobRunning {
				n++
			}
		}
		if n != gangs {
			return fmt.Errorf("%d of %d gangs Running", n, gangs)
		}
		return nil
	})
	reportFailover(t, ctx, rs, obs, killed)
	if r := checkOneLeader(t, ctx, rs); r == lead {
		t.Fatalf("the killed %s still leads", lead.name)
	}
	for _, check := range []string{"scheduler-leader", "dispatch-synced"} {
		if d, ok := leaders.after(check); ok {
			t.Logf("FAILOVER: %s reported by a surviving replica %s after the kill", check, d.Round(10*time.Millisecond))
		}
	}
	t.Logf("before the kill a gang took %s (median) from seen placed to seen running", obs.medianStart())
	checkNoLoss(t, ctx, a, w)
	checkGangsWhole(t, ctx, a)
	checkNoGPUTwice(t, ctx, rs)
}

// checkOneCA: every replica serves a certificate of the one CA in the
// admin configuration, valid for the Service name and for its own address.
func checkOneCA(t *testing.T, a *api, rs *replicaSet) {
	t.Helper()
	for _, r := range rs.replicas {
		for _, name := range []string{"shoal-hub.shoal-system.svc", "127.0.0.1"} {
			if _, err := a.servedCertificate(r.addr, name); err != nil {
				t.Fatalf("%s as %s: %v", r.name, name, err)
			}
		}
	}
}

// workload submits the gangs and the parked jobs and counts what was
// acknowledged (Submit returned OK).
type workload struct {
	a     *api
	mu    sync.Mutex
	acked map[string]bool
	// already are retries answered AlreadyExists: an earlier attempt was
	// stored though its answer was lost; not counted as acknowledged.
	already atomic.Int64
	retries atomic.Int64
	ackedN  atomic.Int64
}

func newWorkload(a *api) *workload { return &workload{a: a, acked: map[string]bool{}} }

func (w *workload) submit(ctx context.Context, t *testing.T, j *v1alpha1.Job) {
	b, err := json.Marshal(j)
	if err != nil {
		t.Error(err)
		return
	}
	attempts := 0
	err = w.a.call(ctx, func(ctx context.Context, conn *grpc.ClientConn) error {
		attempts++
		_, err := shoalv1.NewJobsClient(conn).Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: b}})
		return err
	})
	if attempts > 1 {
		w.retries.Add(int64(attempts - 1))
	}
	switch {
	case err == nil:
		w.mu.Lock()
		w.acked[j.Name] = true
		w.mu.Unlock()
		w.ackedN.Add(1)
	case attempts > 1 && status.Code(err) == codes.AlreadyExists:
		w.already.Add(1)
	default:
		t.Errorf("submit %s: %v", j.Name, err)
	}
}

func (w *workload) submitGangs(ctx context.Context, t *testing.T) {
	for i := range gangs {
		w.submit(ctx, t, testjob.New(fmt.Sprintf("gang-%02d", i)).Queue(gangQueue).Members(gangMembers).GPUs(1).Obj())
		select {
		case <-ctx.Done():
			return
		case <-time.After(700 * time.Millisecond): // 14 s of gangs: some are submitted after the kill
		}
	}
}

func (w *workload) submitParked(ctx context.Context, t *testing.T, c int) {
	for i := range perSubmitter {
		w.submit(ctx, t, testjob.New(fmt.Sprintf("parked-%d-%03d", c, i)).Queue(parkedQueue).GPUs(1).Obj())
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond): // at least 12.5 s of submissions: still in flight at the kill
		}
	}
}

// observer polls the gangs through the live replicas and records when each
// was first seen placed and running.
type observer struct {
	a       *api
	mu      sync.Mutex
	placed  map[string]time.Time
	running map[string]time.Time
	kill    time.Time
	// placedAtKill are the gangs seen placed before the kill.
	placedAtKill map[string]bool
}

func newObserver(a *api) *observer {
	return &observer{a: a, placed: map[string]time.Time{}, running: map[string]time.Time{}}
}

func (o *observer) run(ctx context.Context) {
	for ctx.Err() == nil {
		js, err := o.a.listJobs(ctx, gangQueue)
		now := time.Now()
		if err == nil {
			o.mu.Lock()
			for _, j := range js {
				if j.Status.Phase != v1alpha1.JobPending {
					if _, ok := o.placed[j.Name]; !ok {
						o.placed[j.Name] = now
					}
				}
				if j.Status.Phase == v1alpha1.JobRunning {
					if _, ok := o.running[j.Name]; !ok {
						o.running[j.Name] = now
					}
				}
			}
			o.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (o *observer) counts() (running, placed int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.running), len(o.placed)
}

func (o *observer) markKill(at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.kill, o.placedAtKill = at, map[string]bool{}
	for name := range o.placed {
		o.placedAtKill[name] = true
	}
}

// firstAfterKill is the first time one of the gangs booked after the kill
// was seen placed and running.
func (o *observer) firstAfterKill(bookedAfter map[string]bool) (placed, running time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for name, at := range o.placed {
		if bookedAfter[name] && (placed == 0 || at.Sub(o.kill) < placed) {
			placed = at.Sub(o.kill)
		}
	}
	for name, at := range o.running {
		if bookedAfter[name] && (running == 0 || at.Sub(o.kill) < running) {
			running = at.Sub(o.kill)
		}
	}
	return placed, running
}

// openStore reads the hub's etcd directly, for the ledger.
func openStore(t *testing.T, ctx context.Context, rs *replicaSet) *store.Store {
	t.Helper()
	tlsCfg, err := rs.etcd.Certs.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, store.Config{Endpoints: rs.etcd.Endpoints(), TLS: tlsCfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// reportFailover logs the time from the kill to the new leader's first
// booking (the reservation's Booked time, written by the scheduler) and
// to the first gang seen placed and running after it, and checks that a
// surviving replica leads both elections.
func reportFailover(t *testing.T, ctx context.Context, rs *replicaSet, o *observer, killed time.Time) {
	t.Helper()
	res, err := ledger.New(openStore(t, ctx, rs)).Reservations().List(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var booked time.Duration
	bookedAfter := map[string]bool{}
	for _, it := range res.Items {
		d := it.Object.Booked.Sub(killed)
		if d <= 0 {
			continue
		}
		bookedAfter[it.Object.Job] = true
		if booked == 0 || d < booked {
			booked = d
		}
	}
	placed, running := o.firstAfterKill(bookedAfter)
	if booked == 0 || placed == 0 {
		t.Fatalf("no gang was booked after the kill (booked %v, seen placed %v)", booked, placed)
	}
	t.Logf("FAILOVER: SIGKILL of the leader -> next gang booked by the new leader after %s (one of the %d gangs it booked seen placed through the API after %s, running after %s)",
		booked.Round(10*time.Millisecond), len(bookedAfter), placed.Round(10*time.Millisecond), running.Round(10*time.Millisecond))
	for _, check := range []string{"scheduler-leader", "dispatch-synced"} {
		if r := rs.leader(ctx, check); r == nil {
			t.Errorf("no surviving replica reports %s leading", check)
		} else {
			t.Logf("%s now led by %s", check, r.name)
		}
	}
}

// checkNoLoss: every acknowledged job is stored, once; the parked jobs are
// still queued.
func checkNoLoss(t *testing.T, ctx context.Context, a *api, w *workload) {
	t.Helper()
	all, err := a.listJobs(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, j := range all {
		seen[j.Name]++
		if j.Spec.Queue == parkedQueue && j.Status.Phase != v1alpha1.JobPending {
			t.Errorf("parked job %s is %s, want Pending (quota 0)", j.Name, j.Status.Phase)
		}
	}
	lost, dups := 0, 0
	for name := range w.acked {
		if seen[name] == 0 {
			lost++
			t.Errorf("acknowledged job %s lost", name)
		}
	}
	for name, n := range seen {
		if n > 1 {
			dups++
			t.Errorf("job %s listed %d times", name, n)
		}
	}
	byQueue := 0
	for _, q := range []string{gangQueue, parkedQueue} {
		js, err := a.listJobs(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		byQueue += len(js)
	}
	if byQueue != len(all) {
		t.Errorf("the queue index lists %d jobs, the store %d", byQueue, len(all))
	}
	t.Logf("jobs: %d acknowledged, %d stored, %d lost, %d duplicates; %d retries on another replica, %d retries found the job stored (not counted as acknowledged)",
		len(w.acked), len(all), lost, dups, w.retries.Load(), w.already.Load())
}

// checkGangsWhole: every gang has exactly its members on both sides, one
// pod per member index, all Running, of the gang's current epoch.
func checkGangsWhole(t *testing.T, ctx context.Context, a *api) {
	t.Helper()
	hub, err := fleet.Hub().Clientset()
	if err != nil {
		t.Fatal(err)
	}
	js, err := a.listJobs(ctx, gangQueue)
	if err != nil {
		t.Fatal(err)
	}
	partial := 0
	for _, j := range js {
		sel := metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + j.Name}
		hp, err := hub.CoreV1().Pods(metav1.NamespaceAll).List(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		pods := hp.Items
		for _, c := range fleet.Workloads() {
			cs, err := c.Clientset()
			if err != nil {
				t.Fatal(err)
			}
			lp, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, sel)
			if err != nil {
				t.Fatal(err)
			}
			pods = append(pods, lp.Items...)
		}
		if problem := wholeGang(j, pods); problem != "" {
			partial++
			t.Errorf("gang %s: %s", j.Name, problem)
		}
	}
	t.Logf("gangs: %d Running, %d partial", len(js), partial)
}

// wholeGang says what is wrong with a gang's pods (hub and local
// together: each member twice), or "".
func wholeGang(j *v1alpha1.Job, pods []corev1.Pod) string {
	byMember := map[string]int{}
	epoch := strconv.FormatInt(j.Status.Epoch, 10)
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Sprintf("pod %s/%s is %s", p.Namespace, p.Name, p.Status.Phase)
		}
		if e := p.Labels[v1alpha1.LabelEpoch]; e != epoch {
			return fmt.Sprintf("pod %s/%s of epoch %s, the job's is %s", p.Namespace, p.Name, e, epoch)
		}
		byMember[p.Labels[v1alpha1.LabelMember]]++
	}
	if len(byMember) != gangMembers {
		return fmt.Sprintf("pods of %d members, want %d: %v", len(byMember), gangMembers, byMember)
	}
	for m, n := range byMember {
		if n != 2 {
			return fmt.Sprintf("member %s has %d pods, want a hub pod and a local pod", m, n)
		}
	}
	return ""
}

// checkNoGPUTwice: the reservations book no node beyond its GPUs, each
// reservation's job is a running gang, and every local member runs on the
// node its reservation booked for it, no node holding more GPUs than it has.
func checkNoGPUTwice(t *testing.T, ctx context.Context, rs *replicaSet) {
	t.Helper()
	res, err := ledger.New(openStore(t, ctx, rs)).Reservations().List(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	capacity := map[string]int64{}   // cluster/node -> GPUs
	usedByPods := map[string]int64{} // cluster/node -> GPUs requested by local members
	podNode := map[string]string{}   // job/member -> cluster/node
	for _, c := range fleet.Workloads() {
		cs, err := c.Clientset()
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes.Items {
			q := n.Status.Allocatable[corev1.ResourceName(inventory.ResourceGPU)]
			capacity[c.Name+"/"+n.Name] = q.Value()
		}
		pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
				continue
			}
			key := c.Name + "/" + p.Spec.NodeName
			usedByPods[key] += inventory.PodGPURequests(&p)[inventory.ResourceGPU]
			podNode[p.Labels[v1alpha1.LabelJob]+"/"+p.Labels[v1alpha1.LabelMember]] = key
		}
	}
	booked := map[string]int64{}
	twice := 0
	for _, it := range res.Items {
		r := it.Object
		if len(r.Members) != gangMembers {
			t.Errorf("reservation %s: %d members, want %d", it.Name, len(r.Members), gangMembers)
		}
		for _, m := range r.Members {
			key := m.Cluster + "/" + m.Node
			booked[key] += int64(r.Gang.GPUsPerMember)
			if got := podNode[r.Job+"/"+strconv.Itoa(int(m.Index))]; got != key {
				t.Errorf("job %s member %d runs on %q, booked on %q", r.Job, m.Index, got, key)
			}
		}
	}
	var keys []string
	for k := range capacity {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if booked[k] > capacity[k] || usedByPods[k] > capacity[k] {
			twice++
			t.Errorf("node %s: %d GPUs booked, %d requested by running members, %d exist", k, booked[k], usedByPods[k], capacity[k])
		}
	}
	if len(res.Items) != gangs {
		t.Errorf("%d reservations, want one per gang (%d)", len(res.Items), gangs)
	}
	t.Logf("GPUs: %d reservations, %d nodes booked beyond their GPUs", len(res.Items), twice)
}

// medianStart is the median time from seen placed to seen running of the
// gangs placed before the kill, for comparison with the failover.
func (o *observer) medianStart() time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ds []time.Duration
	for name := range o.placedAtKill {
		if run, ok := o.running[name]; ok && run.Before(o.kill) {
			ds = append(ds, run.Sub(o.placed[name]))
		}
	}
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2].Round(10 * time.Millisecond)
}

// leaderTimes records when, after the kill, a surviving replica first
// reported each leader check as leading and synced (/readyz?verbose).
type leaderTimes struct {
	mu sync.Mutex
	at map[string]time.Duration
}

func watchLeaders(ctx context.Context, rs *replicaSet, killed time.Time) *leaderTimes {
	lt := &leaderTimes{at: map[string]time.Duration{}}
	go func() {
		for ctx.Err() == nil {
			done := 0
			for _, check := range []string{"scheduler-leader", "dispatch-synced"} {
				lt.mu.Lock()
				_, seen := lt.at[check]
				lt.mu.Unlock()
				if seen {
					done++
					continue
				}
				if rs.leader(ctx, check) != nil {
					lt.mu.Lock()
					lt.at[check] = time.Since(killed)
					lt.mu.Unlock()
				}
			}
			if done == 2 {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return lt
}

func (lt *leaderTimes) after(check string) (time.Duration, bool) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	d, ok := lt.at[check]
	return d, ok
}
