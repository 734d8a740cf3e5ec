// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// statsSource reads what the stats summary of a virtual node is built from
// (podsync.Syncer): the local pod of a member, and a local node's summary
// from its kubelet.
type statsSource interface {
	LocalPodOf(hub *corev1.Pod) (*corev1.Pod, bool)
	NodeSummary(ctx context.Context, node string) (*statsv1alpha1.Summary, error)
}

// Stats fetching bounds: local nodes read at once, and the time one may take.
const (
	statsParallel = 8
	statsTimeout  = 10 * time.Second
)

// summarize builds the stats summary of virtual node vnode from its members'
// real stats: each member's pod stats are those its local pod has in the
// summary of the local node it runs on, with the pod reference turned to
// the hub pod; the node section sums the pods'. Nothing is invented: a
// member whose local pod is not bound yet, or whose node serves no summary
// (a KWOK node, an unreachable kubelet), is left out, and a figure no pod
// reported stays unset. started is when the endpoint started (the node's
// start time, as a kubelet's is its own).
func summarize(ctx context.Context, vnode string, started time.Time, hubPods []*corev1.Pod, src statsSource) *statsv1alpha1.Summary {
	var nodes []string
	seen := map[string]bool{}
	for _, hp := range hubPods {
		lp, ok := src.LocalPodOf(hp)
		if ok && lp.Spec.NodeName != "" && !seen[lp.Spec.NodeName] {
			seen[lp.Spec.NodeName] = true
			nodes = append(nodes, lp.Spec.NodeName)
		}
	}
	summaries := fetchSummaries(ctx, nodes, src)
	out := &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: vnode, StartTime: metav1.NewTime(started)},
		Pods: []statsv1alpha1.PodStats{}}
	for _, hp := range hubPods { // in the members' order
		lp, ok := src.LocalPodOf(hp)
		if !ok {
			continue
		}
		sum := summaries[lp.Spec.NodeName]
		if sum == nil {
			continue
		}
		ps, ok := podStats(sum, lp)
		if !ok {
			continue
		}
		ps.PodRef = statsv1alpha1.PodReference{Name: hp.Name, Namespace: hp.Namespace, UID: string(hp.UID)}
		out.Pods = append(out.Pods, ps)
	}
	out.Node.CPU, out.Node.Memory, out.Node.Network = sumCPU(out.Pods), sumMemory(out.Pods), sumNetwork(out.Pods)
	return out
}

// fetchSummaries reads the summary of each node, statsParallel at a time;
// a node whose summary cannot be read is absent from the result.
func fetchSummaries(ctx context.Context, nodes []string, src statsSource) map[string]*statsv1alpha1.Summary {
	log := klog.FromContext(ctx)
	out := make(map[string]*statsv1alpha1.Summary, len(nodes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, statsParallel)
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(ctx, statsTimeout)
			defer cancel()
			s, err := src.NodeSummary(ctx, n)
			if err != nil {
				log.V(2).Info("No stats from a local node; its members are left out of the summary", "localNode", n, "err", err)
				return
			}
			mu.Lock()
			out[n] = s
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// podStats finds the stats of local pod lp in a node summary (the UID must
// match when the kubelet gives one, so a recreated pod's old stats do not count).
func podStats(sum *statsv1alpha1.Summary, lp *corev1.Pod) (statsv1alpha1.PodStats, bool) {
	for _, ps := range sum.Pods {
		r := ps.PodRef
		if r.Namespace == lp.Namespace && r.Name == lp.Name && (r.UID == "" || types.UID(r.UID) == lp.UID) {
			return ps, true
		}
	}
	return statsv1alpha1.PodStats{}, false
}

// addTo adds v to *acc, allocating it on the first value; nil adds nothing.
func addTo(acc **uint64, v *uint64) {
	if v == nil {
		return
	}
	if *acc == nil {
		*acc = new(uint64)
	}
	**acc += *v
}

func later(a, b metav1.Time) metav1.Time {
	if b.After(a.Time) {
		return b
	}
	return a
}

func sumCPU(pods []statsv1alpha1.PodStats) *statsv1alpha1.CPUStats {
	var out *statsv1alpha1.CPUStats
	for _, p := range pods {
		if p.CPU == nil {
			continue
		}
		if out == nil {
			out = &statsv1alpha1.CPUStats{}
		}
		out.Time = later(out.Time, p.CPU.Time)
		addTo(&out.UsageNanoCores, p.CPU.UsageNanoCores)
		addTo(&out.UsageCoreNanoSeconds, p.CPU.UsageCoreNanoSeconds)
	}
	return out
}

func sumMemory(pods []statsv1alpha1.PodStats) *statsv1alpha1.MemoryStats {
	var out *statsv1alpha1.MemoryStats
	for _, p := range pods {
		if p.Memory == nil {
			continue
		}
		if out == nil {
			out = &statsv1alpha1.MemoryStats{}
		}
		out.Time = later(out.Time, p.Memory.Time)
		addTo(&out.UsageBytes, p.Memory.UsageBytes)
		addTo(&out.WorkingSetBytes, p.Memory.WorkingSetBytes)
		addTo(&out.RSSBytes, p.Memory.RSSBytes)
		addTo(&out.PageFaults, p.Memory.PageFaults)
		addTo(&out.MajorPageFaults, p.Memory.MajorPageFaults)
	}
	return out
}

// sumNetwork sums the pods' default-interface traffic.
func sumNetwork(pods []statsv1alpha1.PodStats) *statsv1alpha1.NetworkStats {
	var out *statsv1alpha1.NetworkStats
	for _, p := range pods {
		if p.Network == nil {
			continue
		}
		if out == nil {
			out = &statsv1alpha1.NetworkStats{}
		}
		out.Time = later(out.Time, p.Network.Time)
		addTo(&out.RxBytes, p.Network.RxBytes)
		addTo(&out.RxErrors, p.Network.RxErrors)
		addTo(&out.TxBytes, p.Network.TxBytes)
		addTo(&out.TxErrors, p.Network.TxErrors)
	}
	return out
}
