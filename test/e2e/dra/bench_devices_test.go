// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/builders/testjob"
	"github.com/shoal-dev/shoal/test/framework"
)

// benchMembers is the gang of BenchmarkGangStartDRAvsExtended: one GPU per
// member, every GPU of one workload cluster (8 nodes × 8).
const benchMembers = nodes * 8

// benchDevices is the device request of the benchmark's DRA gangs: the
// class and selectors docs/dra.md shows.
var benchDevices = v1alpha1.DeviceRequest{DeviceClassName: "gpu.nvidia.com", Selectors: []resourcev1.DeviceSelector{
	{CEL: &resourcev1.CELDeviceSelector{Expression: `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80G")) >= 0`}},
	{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].architecture == "Hopper"`}},
}}

// BenchmarkGangStartDRAvsExtended measures submit → job Running (every
// member Running) for a 64-member gang of one GPU each, in one fleet and
// one run, on
//
//   - dra: the DRA-only cluster, asking by device request
//     (spec.gang.devices: class gpu.nvidia.com, memory ≥ 80G, Hopper): the
//     agent creates one ResourceClaim per member and the member cluster's
//     kube-scheduler allocates it;
//   - ext: the extended-resource cluster of the same nodes, asking for
//     gpusPerMember: 1 (nvidia.com/gpu).
//
// Each iteration starts one gang on each side, alternating which goes
// first (ABBA), so both share the machine's noise; each sample cancels its
// gang and waits until its pods and claims are gone and every GPU is free
// before the next; one untimed gang per side goes first. It reports p50 and p99 of each side and their
// difference, and logs where the time went: when the hub's job was Placed,
// and when the member cluster had the last member's pod created, claim
// created (dra), pod ungated (the commit), bound, claim allocated (dra)
// and Running, as a watch on the member cluster saw them.
//
// Each iteration is one sample per side (docs/dra.md, "Cost of DRA in gang start"):
//
//	go test ./test/e2e/dra -run '^$' -bench GangStartDRAvsExtended -benchtime 20x -timeout 40m -v
func BenchmarkGangStartDRAvsExtended(b *testing.B) {
	if testing.Short() {
		b.Skip("end to end on a local fleet")
	}
	conn := framework.DialHub(b, fl.Shoal.Config, devfleet.ShoalContext)
	jobs, clusters := shoalv1.NewJobsClient(conn), shoalv1.NewClustersClient(conn)
	if out, err := shoalCLI("", "queue", "create", "bench"); err != nil && !strings.Contains(out, "already exists") {
		b.Fatalf("queue: %v\n%s", err, out)
	}
	cs := map[string]kubernetes.Interface{}
	for _, w := range fl.Workloads() {
		c, err := w.Clientset()
		if err != nil {
			b.Fatal(err)
		}
		cs[w.Profile] = c
	}
	type side struct {
		name, profile string
		devices       bool
		samples       []stages
	}
	sides := []*side{{name: "dra", profile: profileDRA, devices: true}, {name: "ext", profile: profileExtended}}
	// The DRA cluster's inventory must show its devices and the class
	// selecting them, or the first gang waits for it.
	fl.NewHubAPI(b).WaitInventory(b, draName, 2*time.Minute, func(c *fedinv.Cluster) bool {
		for _, n := range c.Nodes {
			if n.DRADevices == nil || len(n.DRADevices.Classes) == 0 {
				return false
			}
		}
		return len(c.Nodes) == nodes && c.FreeGPUs() == nodes*8
	})
	i := 0
	run := func(s *side, name string) stages {
		j := testjob.New(name).Queue("bench").Members(benchMembers).GPUs(1).With(func(j *v1alpha1.Job) {
			j.Spec.Placement.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"profile": s.profile}}
			if s.devices {
				d := benchDevices
				j.Spec.Gang.Devices = &d
			}
		}).Obj()
		st, err := startGangStages(b.Context(), jobs, cs[s.profile], j, s.devices)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: %s", name, st)
		b.StopTimer()
		if err := cancelGone(b.Context(), jobs, clusters, name); err != nil {
			b.Fatal(err)
		}
		if err := localGone(b.Context(), cs[s.profile], name); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		return st
	}
	// One gang on each side first, not counted: the first start after the
	// fleet comes up pays for caches and connections.
	for _, s := range sides {
		run(s, "bench-warmup-"+s.name)
	}
	for b.Loop() {
		order := sides
		if i%2 == 1 {
			order = []*side{sides[1], sides[0]}
		}
		for _, s := range order {
			s.samples = append(s.samples, run(s, fmt.Sprintf("bench-%s-%d", s.name, i)))
		}
		i++
	}
	p := map[string][2]time.Duration{}
	for _, s := range sides {
		ds := make([]time.Duration, len(s.samples))
		for k, st := range s.samples {
			ds[k] = st.total
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		p[s.name] = [2]time.Duration{pct(ds, 0.50), pct(ds, 0.99)}
		b.ReportMetric(p[s.name][0].Seconds(), s.name+"-p50-s")
		b.ReportMetric(p[s.name][1].Seconds(), s.name+"-p99-s")
		b.Logf("%s: %d samples, p50 %s, p99 %s; median of each stage (last member, from submit): %s",
			s.name, len(ds), p[s.name][0].Round(time.Millisecond), p[s.name][1].Round(time.Millisecond), medianStages(s.samples))
	}
	b.ReportMetric((p["dra"][0] - p["ext"][0]).Seconds(), "diff-p50-s")
	b.ReportMetric((p["dra"][1] - p["ext"][1]).Seconds(), "diff-p99-s")
}

// stages is one gang start: total is submit → job Running; the rest are
// from submit to when the hub's job was first seen Placed, and when the
// member cluster's watch saw the last member's pod created, claim created,
// pod ungated, bound, claim allocated and Running (0: not seen, or no
// claims on this side).
type stages struct {
	total, placed                                          time.Duration
	created, claimed, ungated, bound, allocated, podsReady time.Duration
}

func (s stages) String() string {
	r := func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
	return fmt.Sprintf("total %s: placed %s, pods created %s, claims created %s, ungated %s, bound %s, claims allocated %s, pods Running %s",
		r(s.total), r(s.placed), r(s.created), r(s.claimed), r(s.ungated), r(s.bound), r(s.allocated), r(s.podsReady))
}

func medianStages(ss []stages) stages {
	med := func(f func(stages) time.Duration) time.Duration {
		var ds []time.Duration
		for _, s := range ss {
			if d := f(s); d > 0 { // 0: not seen
				ds = append(ds, d)
			}
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return pct(ds, 0.5)
	}
	return stages{
		total:     med(func(s stages) time.Duration { return s.total }),
		placed:    med(func(s stages) time.Duration { return s.placed }),
		created:   med(func(s stages) time.Duration { return s.created }),
		claimed:   med(func(s stages) time.Duration { return s.claimed }),
		ungated:   med(func(s stages) time.Duration { return s.ungated }),
		bound:     med(func(s stages) time.Duration { return s.bound }),
		allocated: med(func(s stages) time.Duration { return s.allocated }),
		podsReady: med(func(s stages) time.Duration { return s.podsReady }),
	}
}

// memberWatch records, per local pod or claim of one job in one member
// cluster, when a watch first saw it reach each stage.
type memberWatch struct {
	mu    sync.Mutex
	start time.Time
	seen  map[string]map[string]time.Duration // stage → object → since start
}

func (m *memberWatch) mark(stage, obj string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen[stage] == nil {
		m.seen[stage] = map[string]time.Duration{}
	}
	if _, ok := m.seen[stage][obj]; !ok {
		m.seen[stage][obj] = time.Since(m.start)
	}
}

// last is when the n-th object reached stage (0 when fewer did).
func (m *memberWatch) last(stage string, n int) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.seen[stage]) < n {
		return 0
	}
	var d time.Duration
	for _, t := range m.seen[stage] {
		d = max(d, t)
	}
	return d
}

// watchMembers watches the job's local pods (and claims) in cs until ctx
// ends, resuming a watch the apiserver closes (a loaded machine drops
// them) from the last resource version it saw.
func watchMembers(ctx context.Context, cs kubernetes.Interface, job string, claims bool, m *memberWatch) error {
	sel := v1alpha1.LabelJob + "=" + job
	pl, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return err
	}
	pw, err := watchtools.NewRetryWatcherWithContext(ctx, pl.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return cs.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, o)
		}})
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		pw.Stop()
	}()
	go func() {
		for ev := range pw.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			m.mark("created", p.Name)
			gated := false
			for _, g := range p.Spec.SchedulingGates {
				gated = gated || g.Name == v1alpha1.SchedulingGate
			}
			if !gated {
				m.mark("ungated", p.Name)
			}
			if p.Spec.NodeName != "" {
				m.mark("bound", p.Name)
			}
			if p.Status.Phase == corev1.PodRunning {
				m.mark("running", p.Name)
			}
		}
	}()
	if !claims {
		return nil
	}
	cl, err := cs.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return err
	}
	cw, err := watchtools.NewRetryWatcherWithContext(ctx, cl.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return cs.ResourceV1().ResourceClaims(metav1.NamespaceAll).Watch(ctx, o)
		}})
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		cw.Stop()
	}()
	go func() {
		for ev := range cw.ResultChan() {
			c, ok := ev.Object.(*resourcev1.ResourceClaim)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			m.mark("claimed", c.Name)
			if c.Status.Allocation != nil {
				m.mark("allocated", c.Name)
			}
		}
	}()
	return nil
}

// startGangStages submits j, waits until it is Running, and returns its
// stages; the member cluster cs is watched from just before the submit.
func startGangStages(ctx context.Context, jobs shoalv1.JobsClient, cs kubernetes.Interface, j *v1alpha1.Job, claims bool) (stages, error) {
	var st stages
	raw, err := json.Marshal(j)
	if err != nil {
		return st, err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	m := &memberWatch{seen: map[string]map[string]time.Duration{}}
	m.start = time.Now()
	if err := watchMembers(wctx, cs, j.Name, claims, m); err != nil {
		return st, err
	}
	start := time.Now()
	m.mu.Lock()
	m.start = start
	m.mu.Unlock()
	if _, err := jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: raw}}); err != nil {
		return st, err
	}
	var cur *v1alpha1.Job
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		cur, err = getJob(ctx, jobs, j.Name)
		if err != nil {
			return false, nil
		}
		if st.placed == 0 && cur.Status.Phase != v1alpha1.JobPending {
			st.placed = time.Since(start)
		}
		return cur.Status.Phase == v1alpha1.JobRunning, nil
	})
	st.total = time.Since(start)
	if err != nil {
		return st, fmt.Errorf("job %s not Running: %w (status %+v)", j.Name, err, cur)
	}
	if cur.Status.Restarts > 0 {
		return st, fmt.Errorf("job %s restarted %d times before Running: %+v", j.Name, cur.Status.Restarts, cur.Status.Conditions)
	}
	n := int(j.Spec.Gang.Members)
	// The watch may lag the hub by a little: give it until it has seen every member Running.
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return m.last("running", n) > 0 && (!claims || m.last("allocated", n) > 0), nil
	})
	st.created, st.ungated, st.bound, st.podsReady = m.last("created", n), m.last("ungated", n), m.last("bound", n), m.last("running", n)
	if claims {
		st.claimed, st.allocated = m.last("claimed", n), m.last("allocated", n)
	}
	return st, nil
}

// localGone waits until the member cluster has no pod and no claim of the job left.
func localGone(ctx context.Context, cs kubernetes.Interface, job string) error {
	opts := metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ps, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		if err != nil || len(ps.Items) > 0 {
			return false, nil
		}
		cl, err := cs.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(ctx, opts)
		return err == nil && len(cl.Items) == 0, nil
	})
}
