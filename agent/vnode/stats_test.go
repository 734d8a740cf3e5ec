// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testpod"
)

// fakeStats plays the workload cluster: local pods by hub pod name, and the
// summaries its kubelets serve (a node absent from summaries serves none).
type fakeStats struct {
	local     map[string]*corev1.Pod
	summaries map[string]*statsv1alpha1.Summary
	asked     map[string]int
}

func (f *fakeStats) LocalPodOf(hub *corev1.Pod) (*corev1.Pod, bool) {
	lp, ok := f.local[hub.Name]
	return lp, ok
}

func (f *fakeStats) NodeSummary(_ context.Context, node string) (*statsv1alpha1.Summary, error) {
	f.asked[node]++
	s, ok := f.summaries[node]
	if !ok {
		return nil, errors.New("the server could not find the requested resource") // a KWOK node
	}
	return s, nil
}

func u64(v uint64) *uint64 { return &v }

func podStat(ns, name, uid string, at time.Time, cpu, mem uint64) statsv1alpha1.PodStats {
	t := metav1.NewTime(at)
	return statsv1alpha1.PodStats{PodRef: statsv1alpha1.PodReference{Name: name, Namespace: ns, UID: uid},
		CPU:    &statsv1alpha1.CPUStats{Time: t, UsageNanoCores: u64(cpu), UsageCoreNanoSeconds: u64(cpu * 100)},
		Memory: &statsv1alpha1.MemoryStats{Time: t, WorkingSetBytes: u64(mem), UsageBytes: u64(mem + 1)},
		Containers: []statsv1alpha1.ContainerStats{{Name: "main",
			CPU: &statsv1alpha1.CPUStats{Time: t, UsageNanoCores: u64(cpu)}}}}
}

func hubMember(name string) *corev1.Pod {
	p := testpod.New(name).Namespace("shoal-jobs").Node("shoal-eu1-h100").GPUs(8).Label(v1alpha1.LabelJob, "llama").Obj()
	p.UID = types.UID("hub-" + name)
	return p
}

func localOf(name, node string) *corev1.Pod {
	p := testpod.New(name).Namespace("shoal-jobs").Node(node).GPUs(8).Obj()
	p.UID = types.UID("local-" + name)
	return p
}

func TestSummarize(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	src := &fakeStats{asked: map[string]int{},
		local: map[string]*corev1.Pod{
			"m0": localOf("m0", "n1"), "m1": localOf("m1", "n1"), "m2": localOf("m2", "n2"),
			"m3":      localOf("m3", "kwok-1"), // a KWOK node serves no stats
			"pending": localOf("pending", ""),  // not bound yet
		},
		summaries: map[string]*statsv1alpha1.Summary{
			"n1": {Node: statsv1alpha1.NodeStats{NodeName: "n1"}, Pods: []statsv1alpha1.PodStats{
				podStat("shoal-jobs", "m0", "local-m0", t0, 1000, 10),
				podStat("shoal-jobs", "m1", "local-m1", t0.Add(time.Second), 2000, 20),
				podStat("kube-system", "coredns", "x", t0, 99999, 99999), // not a member
			}},
			"n2": {Node: statsv1alpha1.NodeStats{NodeName: "n2"}, Pods: []statsv1alpha1.PodStats{
				podStat("shoal-jobs", "m2", "an-older-pod-of-that-name", t0, 50000, 500),
			}},
		}}
	members := []*corev1.Pod{hubMember("m0"), hubMember("m1"), hubMember("m2"), hubMember("m3"), hubMember("pending"), hubMember("gone")}
	started := t0.Add(-time.Hour)
	s := summarize(t.Context(), "shoal-eu1-h100", started, members, src)

	if s.Node.NodeName != "shoal-eu1-h100" || !s.Node.StartTime.Time.Equal(started) {
		t.Errorf("node = %s started %v", s.Node.NodeName, s.Node.StartTime)
	}
	if len(s.Pods) != 2 {
		t.Fatalf("pods = %+v, want m0 and m1 only (m2's stats are of another pod, m3's node serves none)", s.Pods)
	}
	for i, name := range []string{"m0", "m1"} {
		if r := s.Pods[i].PodRef; r.Name != name || r.Namespace != "shoal-jobs" || r.UID != "hub-"+name {
			t.Errorf("pod %d ref = %+v, want the hub pod %s", i, r, name)
		}
	}
	if c := s.Pods[1].CPU; *c.UsageNanoCores != 2000 || len(s.Pods[1].Containers) != 1 {
		t.Errorf("m1 stats not carried: %+v", s.Pods[1])
	}
	cpu, mem := s.Node.CPU, s.Node.Memory
	if cpu == nil || *cpu.UsageNanoCores != 3000 || *cpu.UsageCoreNanoSeconds != 300000 || !cpu.Time.Time.Equal(t0.Add(time.Second)) {
		t.Errorf("node cpu = %+v, want the members' sum at the latest time", cpu)
	}
	if mem == nil || *mem.WorkingSetBytes != 30 || *mem.UsageBytes != 32 || mem.RSSBytes != nil {
		t.Errorf("node memory = %+v, want sums, and no RSS no pod reported", mem)
	}
	if s.Node.Network != nil {
		t.Errorf("network = %+v, no pod reported any", s.Node.Network)
	}
	if src.asked["n1"] != 1 || src.asked["n2"] != 1 || src.asked["kwok-1"] != 1 || len(src.asked) != 3 {
		t.Errorf("summaries asked = %v, want each local node of a member once", src.asked)
	}
}

func TestSummarizeWithoutStats(t *testing.T) {
	src := &fakeStats{asked: map[string]int{}, local: map[string]*corev1.Pod{"m0": localOf("m0", "kwok-1")}}
	s := summarize(t.Context(), "shoal-eu1-h100", time.Now(), []*corev1.Pod{hubMember("m0")}, src)
	if len(s.Pods) != 0 || s.Node.CPU != nil || s.Node.Memory != nil {
		t.Errorf("summary = %+v, want no pods and no figures: nothing is invented", s)
	}
	if s.Pods == nil {
		t.Error("pods is null; metrics scrapers expect a list")
	}
}
