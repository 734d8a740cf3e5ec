// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// timeline records, per milestone, when each member first reached it.
type timeline struct {
	start time.Time
	mu    sync.Mutex
	at    map[string]map[string]time.Duration // milestone → pod → since start
}

func (tl *timeline) mark(milestone, pod string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.at[milestone] == nil {
		tl.at[milestone] = map[string]time.Duration{}
	}
	if _, ok := tl.at[milestone][pod]; !ok {
		tl.at[milestone][pod] = time.Since(tl.start)
	}
}

// watchPods marks the milestones of job's pods seen by an informer on
// namespace ns of cs.
func (tl *timeline) watchPods(ctx context.Context, cs kubernetes.Interface, ns, side, job string, milestones func(*corev1.Pod) []string) error {
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = v1alpha1.LabelJob + "=" + job }))
	inf := f.Core().V1().Pods().Informer()
	on := func(o any) {
		if p, ok := o.(*corev1.Pod); ok {
			for _, m := range milestones(p) {
				tl.mark(side+" "+m, p.Name)
			}
			if side == "hub" { // the members an agent's report names prepared
				epoch, _ := strconv.ParseInt(p.Labels[v1alpha1.LabelEpoch], 10, 64)
				_ = v1alpha1.ParseMembers(v1alpha1.PreparedMembersReport(p), 1<<16, func(i int32) {
					tl.mark("hub 2 prepared", v1alpha1.MemberPodName(job, epoch, i))
				})
			}
		}
	}
	update := func(old, o any) {
		on(o)
		op, ok1 := old.(*corev1.Pod)
		np, ok2 := o.(*corev1.Pod)
		// Which statuses the hub pods are written with: a milestone per kind.
		if ok1 && ok2 && side == "hub" && !equality.Semantic.DeepEqual(op.Status, np.Status) {
			tl.mark("hub status "+statusKind(&np.Status), np.Name)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: update}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return ctx.Err()
	}
	return nil
}

// statusKind names a pod status by its phase, conditions and container
// states.
func statusKind(st *corev1.PodStatus) string {
	kind := string(st.Phase)
	for _, c := range st.Conditions {
		kind += " " + string(c.Type) + "=" + string(c.Status)
	}
	for _, c := range st.ContainerStatuses {
		switch {
		case c.State.Waiting != nil:
			kind += " waiting:" + c.State.Waiting.Reason
		case c.State.Running != nil:
			kind += " running"
		case c.State.Terminated != nil:
			kind += " terminated:" + c.State.Terminated.Reason
		}
	}
	return kind
}

func hubMilestones(p *corev1.Pod) []string {
	out := []string{"1 created"}
	for _, c := range p.Status.Conditions {
		if c.Type == "shoal.dev/Prepared" && c.Status == corev1.ConditionTrue {
			out = append(out, "2 prepared")
		}
	}
	if p.Annotations[v1alpha1.AnnotationCommit] != "" {
		out = append(out, "3 commit stamped")
	}
	if p.Status.Phase == corev1.PodRunning {
		out = append(out, "4 running")
	}
	return out
}

func localMilestones(p *corev1.Pod) []string {
	out := []string{"1 created"}
	if len(p.Spec.SchedulingGates) == 0 {
		out = append(out, "2 ungated")
	}
	if p.Spec.NodeName != "" {
		out = append(out, "3 bound")
	}
	if p.Status.Phase == corev1.PodRunning {
		out = append(out, "4 running")
	}
	return out
}

// report returns one line per milestone: members, first, p50, last.
func (tl *timeline) report() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var names []string
	for m := range tl.at {
		names = append(names, m)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, m := range names {
		var ds []time.Duration
		for _, d := range tl.at[m] {
			ds = append(ds, d)
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		fmt.Fprintf(&b, "%-24s n=%-4d first=%-8s p50=%-8s last=%s\n", m, len(ds),
			ds[0].Round(time.Millisecond), pct(ds, 0.5).Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}
	return b.String()
}

// TestGangTimeline logs when the members of a 64-member gang over two
// clusters pass each step (hub and local side), and each API server's
// writes until the gang runs, to find where the start time goes. It
// asserts only that the gang runs; set SHOAL_TIMELINE=1
// (SHOAL_TIMELINE_MEMBERS=256: 256 members of one GPU instead of 64 of 4;
// SHOAL_TIMELINE_CPUPROFILE=FILE: a CPU profile of the test binary, the
// hub and the agents, from each gang's submit until it runs, in
// FILE-<gang>; SHOAL_TIMELINE_APIPROFILE=DIR: a 5 s CPU profile of each
// API server from each gang's submit; the API servers serve profiles when
// the fleet started with SHOAL_DEV_PROFILING=1).
func TestGangTimeline(t *testing.T) {
	skipShort(t)
	if os.Getenv("SHOAL_TIMELINE") == "" {
		t.Skip("set SHOAL_TIMELINE=1 to log a gang start timeline")
	}
	members := int32(64)
	if os.Getenv("SHOAL_TIMELINE_MEMBERS") == "256" {
		members = 256
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for i := range 3 {
		var err error
		name := fmt.Sprintf("timeline-%d", i)
		tl := &timeline{at: map[string]map[string]time.Duration{}}
		if err = tl.watchPods(ctx, h.kube, metav1.NamespaceAll, "hub", name, hubMilestones); err != nil { // in every cluster namespace
			t.Fatal(err)
		}
		for c, cs := range workloads {
			if err := tl.watchPods(ctx, cs, v1alpha1.LocalMemberNamespace("bench"), "local", name, localMilestones); err != nil {
				t.Fatal(c, err)
			}
		}
		servers := map[string]kubernetes.Interface{"hub": h.kube}
		for c, cs := range workloads {
			servers[c] = cs
		}
		before := map[string]map[string]float64{}
		for n, cs := range servers {
			if before[n], err = writeRequests(ctx, cs); err != nil {
				t.Fatal(err)
			}
		}
		profiled := profileAPIServers(ctx, t, servers, name)
		stopProfile := profileTestBinary(t, name)
		cpuBefore := processCPU()
		j := newJob(name, "bench", members, 256/members, func(j *v1alpha1.Job) { j.Spec.Placement.MaxClusters = 2 })
		tl.start = time.Now()
		d, err := startGangSeen(ctx, j, func(cur *v1alpha1.Job) { // job-level milestones
			for _, c := range cur.Status.Conditions {
				if c.Status == "True" {
					tl.mark("job "+c.Type+"/"+c.Reason, name)
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		cpu := cpuSince(cpuBefore) // before the scrapes below, which take some
		stopProfile()
		profiled.Wait()
		var writes []string
		for n, cs := range servers {
			after, err := writeRequests(ctx, cs)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range after {
				if dv := v - before[n][k]; dv > 0 {
					writes = append(writes, fmt.Sprintf("%-8s %5.0f %s", n, dv, k))
				}
			}
		}
		sort.Strings(writes)
		t.Logf("gang %s running after %s:\n%s\nwrites to the API servers until then:\n%s\n\nCPU seconds until then, by process:\n%s",
			name, d.Round(time.Millisecond), tl.report(), strings.Join(writes, "\n"), cpu)
		if err := cancelGone(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
}

// profileTestBinary starts a CPU profile of the test binary into
// SHOAL_TIMELINE_CPUPROFILE-<gang> when that is set; the func returned
// stops it.
func profileTestBinary(t *testing.T, gang string) func() {
	path := os.Getenv("SHOAL_TIMELINE_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path + "-" + gang)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// profileAPIServers writes a 5 s CPU profile of each API server, from
// now, to SHOAL_TIMELINE_APIPROFILE/<gang>-<server>.pprof when that is set.
func profileAPIServers(ctx context.Context, t *testing.T, servers map[string]kubernetes.Interface, gang string) *sync.WaitGroup {
	var wg sync.WaitGroup
	dir := os.Getenv("SHOAL_TIMELINE_APIPROFILE")
	if dir == "" {
		return &wg
	}
	for n, cs := range servers {
		wg.Go(func() {
			b, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "5").DoRaw(ctx)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, gang+"-"+n+".pprof"), b, 0o644)
			}
			if err != nil {
				t.Errorf("profile of %s: %v", n, err)
			}
		})
	}
	return &wg
}

// writeRequests returns an API server's count of mutating requests so far
// (apiserver_request_total), by verb, resource, subresource and code.
func writeRequests(ctx context.Context, cs kubernetes.Interface) (map[string]float64, error) {
	b, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, m := range fams["apiserver_request_total"].GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if slices.Contains([]string{"GET", "LIST", "WATCH"}, l["verb"]) {
			continue
		}
		out[fmt.Sprintf("%s %s/%s %s", l["verb"], l["resource"], l["subresource"], l["code"])] += m.GetCounter().GetValue()
	}
	return out, nil
}

// processCPU returns the CPU time each process of the fleet and the test
// binary (the hub and the agents) has used so far, by "cluster process".
func processCPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, c := range fl.Clusters {
		for _, p := range c.Processes {
			out[c.Name+" "+p.Name] += p.CPU()
		}
	}
	if d, err := devfleet.CPUTime(os.Getpid()); err == nil {
		out["test binary (hub, agents)"] = d
	}
	return out
}

// cpuSince lists the CPU time used since before (a processCPU) by
// process, largest first, with the total.
func cpuSince(before map[string]time.Duration) string {
	now := processCPU()
	var names []string
	var total time.Duration
	for n, v := range now {
		now[n] = v - before[n]
		total += now[n]
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return now[names[i]] > now[names[j]] })
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%-28s %6.2f\n", n, now[n].Seconds())
	}
	fmt.Fprintf(&b, "%-28s %6.2f", "total", total.Seconds())
	return b.String()
}
