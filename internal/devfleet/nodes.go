// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"context"
	"crypto/sha1"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// BuildNodes returns n KWOK fake GPU nodes of profile p for the named cluster:
// GFD labels, GPU capacity and rack/block/zone topology labels in the
// profile's labelling (Profile.Topology). Node i sits in rack i/RackSize;
// rack r in block r/RacksPerBlock; a cluster is one zone.
func BuildNodes(cluster, region string, p *Profile, n int) []*corev1.Node {
	res := corev1.ResourceList{}
	for k, v := range p.Resources {
		res[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	nodes := make([]*corev1.Node, 0, n)
	for i := range n {
		rack := i / p.RackSize
		name := fmt.Sprintf("%s-n%04d", cluster, i)
		labels := map[string]string{
			"kubernetes.io/hostname": name,
			"kubernetes.io/os":       "linux",
			"kubernetes.io/arch":     p.Arch,
			"type":                   "kwok",
			LabelRegion:              region,
			LabelProfile:             p.Name,
		}
		zoneKey, blockKey, rackKey, cliqueKey := LabelZone, LabelBlock, LabelRack, LabelGPUClique
		if p.Topology == TopologyTopographV1 {
			zoneKey, blockKey, rackKey, cliqueKey = LabelTopographTier2, LabelTopographTier1, LabelTopographTier0, LabelTopographDomain
		}
		labels[zoneKey] = cluster + "-z1"
		labels[blockKey] = fmt.Sprintf("%s-b%02d", cluster, rack/p.RacksPerBlock)
		labels[rackKey] = fmt.Sprintf("%s-r%03d", cluster, rack)
		for k, v := range p.Labels {
			labels[k] = v
		}
		if p.CliquePerRack {
			labels[cliqueKey] = CliqueID(cluster, rack)
		}
		nodes = append(nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Labels:      labels,
				Annotations: map[string]string{AnnotationKWOKNode: "fake"},
			},
			Status: corev1.NodeStatus{Capacity: res.DeepCopy(), Allocatable: res.DeepCopy()},
		})
	}
	return nodes
}

// CliqueID is the nvidia.com/gpu.clique value of one NVL72 rack:
// <clusterUUID>.<cliqueId>, with a UUID derived from the cluster and rack so
// that it is stable across runs and unique in a fleet.
func CliqueID(cluster string, rack int) string {
	h := sha1.Sum(fmt.Appendf(nil, "%s/rack/%d", cluster, rack))
	h[6] = h[6]&0x0f | 0x50 // version 5
	h[8] = h[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x.1", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// CreateNodes creates the nodes with the given number of concurrent workers;
// nodes that already exist are left as they are.
func CreateNodes(ctx context.Context, cs kubernetes.Interface, nodes []*corev1.Node, workers int) error {
	if workers < 1 {
		workers = 1
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan *corev1.Node)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for n := range work {
				_, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					cancel(fmt.Errorf("create node %s: %w", n.Name, err))
				}
			}
		})
	}
	for _, n := range nodes {
		select {
		case work <- n:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	return context.Cause(ctx)
}
