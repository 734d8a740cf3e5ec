// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/shoal-dev/shoal/internal/kubeclient"
)

// podStartNamespace holds BenchmarkPodStart's pods in each workload
// cluster.
const podStartNamespace = "podstart"

// BenchmarkPodStart is what BenchmarkGangStart is bounded by: the member
// clusters' own scheduling. It creates the same members as plain pods
// straight in the same two workload clusters (half in each, each bound to
// a node by its own node affinity as the agent's local pods are, 8 GPUs a
// node filled in order), 16 creates at a time per cluster, and takes the
// time until all of them run — no hub, no agent, no gate, no status
// written back anywhere. Same fleet, same kwok, same cores.
func BenchmarkPodStart(b *testing.B) {
	if testing.Short() {
		b.Skip("end to end on a local fleet")
	}
	clusters := clusterNames[:2]
	clients := map[string]kubernetes.Interface{}
	nodes := map[string][]string{}
	for _, c := range clusters {
		cs, err := kubernetes.NewForConfig(kubeclient.Sized(agentConfigs[c], 500, 1000))
		if err != nil {
			b.Fatal(err)
		}
		clients[c] = cs
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podStartNamespace}}
		if _, err := cs.CoreV1().Namespaces().Create(b.Context(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatal(err)
		}
		nl, err := cs.CoreV1().Nodes().List(b.Context(), metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range nl.Items {
			nodes[c] = append(nodes[c], n.Name)
		}
		slices.Sort(nodes[c])
	}
	for _, tc := range []struct{ members, gpus int32 }{{64, 4}, {256, 1}} {
		b.Run(fmt.Sprintf("members=%d", tc.members), func(b *testing.B) {
			var ds []time.Duration
			i := 0
			for b.Loop() {
				run := fmt.Sprintf("podstart-%d-%d", tc.members, i)
				i++
				d, err := startPods(b.Context(), clients, nodes, run, tc.members, tc.gpus)
				if err != nil {
					b.Fatal(err)
				}
				ds = append(ds, d)
				b.StopTimer()
				if err := deletePodsGone(b.Context(), clients, run); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			b.ReportMetric(pct(ds, 0.50).Seconds(), "p50-s")
			b.ReportMetric(pct(ds, 0.99).Seconds(), "p99-s")
		})
	}
}

// startPods creates members pods of gpus GPUs labelled run, half in each
// cluster of clients, and returns the time until all of them run.
func startPods(ctx context.Context, clients map[string]kubernetes.Interface, nodes map[string][]string, run string, members, gpus int32) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	running := map[string]bool{}
	allRunning := make(chan struct{})
	for c, cs := range clients {
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(podStartNamespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "run=" + run }))
		inf := f.Core().V1().Pods().Informer()
		on := func(o any) {
			p, ok := o.(*corev1.Pod)
			if !ok || p.Status.Phase != corev1.PodRunning {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if !running[c+"/"+p.Name] {
				running[c+"/"+p.Name] = true
				if len(running) == int(members) {
					close(allRunning)
				}
			}
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, o any) { on(o) }}); err != nil {
			return 0, err
		}
		f.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return 0, ctx.Err()
		}
	}
	perNode := 8 / gpus
	start := time.Now()
	var g errgroup.Group
	for ci, c := range slices.Sorted(maps.Keys(clients)) {
		g.Go(func() error {
			var cg errgroup.Group
			cg.SetLimit(16)
			for k := range members / int32(len(clients)) {
				cg.Go(func() error {
					p := &corev1.Pod{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-%d", run, ci, k), Labels: map[string]string{"run": run}},
						Spec: corev1.PodSpec{
							Containers: []corev1.Container{{Name: "trainer", Image: "busybox", Resources: corev1.ResourceRequirements{
								Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(gpus), resource.DecimalSI)}}}},
							Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
								NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
									Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{nodes[c][k/perNode]}}}}}}}},
						},
					}
					_, err := clients[c].CoreV1().Pods(podStartNamespace).Create(ctx, p, metav1.CreateOptions{})
					return err
				})
			}
			return cg.Wait()
		})
	}
	if err := g.Wait(); err != nil {
		return time.Since(start), err
	}
	select {
	case <-allRunning:
		return time.Since(start), nil
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		return time.Since(start), fmt.Errorf("%d of %d pods running: %w", len(running), members, ctx.Err())
	}
}

// deletePodsGone deletes the pods labelled run at once and waits until
// they are gone.
func deletePodsGone(ctx context.Context, clients map[string]kubernetes.Interface, run string) error {
	for _, cs := range clients {
		if err := cs.CoreV1().Pods(podStartNamespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)},
			metav1.ListOptions{LabelSelector: "run=" + run}); err != nil {
			return err
		}
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, cs := range clients {
			l, err := cs.CoreV1().Pods(podStartNamespace).List(ctx, metav1.ListOptions{LabelSelector: "run=" + run})
			if err != nil || len(l.Items) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
}
