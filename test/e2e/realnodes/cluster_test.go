// SPDX-License-Identifier: Apache-2.0

package realnodes

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestHostNetworkGangCompletesRendezvous: members with hostNetwork (for
// fabrics whose pod IPs do not route across clusters) are listed by their
// node's address and still find rank 0 by name, split over both clusters,
// in a queue whose pod-security level is privileged.
func TestHostNetworkGangCompletesRendezvous(t *testing.T) {
	if testing.Short() {
		t.Skip("real containers")
	}
	manifest := strings.Replace(rendezvousJob("rdv-host", 2, 8, 2, nil, "  rendezvous: {processesPerMember: 1}\n"),
		"      containers:", "      hostNetwork: true\n      containers:", 1)
	// hostNetwork needs a privileged queue (baseline, the default, refuses
	// host namespaces at submit and in the member clusters).
	manifest = strings.Replace(manifest, "queue: realnodes\n", "queue: realnodes-host\n", 1)
	if out, err := shoalCLI(t, "", "queue", "create", "realnodes-host", "--pod-security", "privileged"); err != nil &&
		!strings.Contains(out, "already exists") {
		t.Fatalf("shoal queue create realnodes-host: %v\n%s", err, out)
	}
	submitJob(t, "realnodes-host", manifest)
	j := waitPhase(t, "rdv-host", v1alpha1.JobSucceeded, 3*time.Minute)
	clusters := map[string]bool{}
	for _, m := range j.Status.Members {
		clusters[m.Cluster] = true
	}
	if len(clusters) != 2 {
		t.Fatalf("members over %v, want both clusters (8 GPUs each)", clusters)
	}
	// A hostNetwork pod reports its node's address and has its node's host
	// name, not <job>-<i>; it still finds rank 0 by <job>-0.<job>.<ns>. (All
	// real nodes share this host's network namespace, so the world shows
	// the addresses the host picks, not one per cluster.)
	for _, p := range hubMemberPods(t, "rdv-host") {
		if p.Status.PodIP == "" || p.Status.PodIP != p.Status.HostIP {
			t.Fatalf("hostNetwork member %s reports pod IP %q, host IP %q", p.Name, p.Status.PodIP, p.Status.HostIP)
		}
		if log := hubLogs(t, p.Name); !strings.Contains(log, "rendezvous complete: world size 2") ||
			!strings.Contains(log, "rank=0 ") || !strings.Contains(log, "rank=1 ") {
			t.Fatalf("member %s did not complete the rendezvous; its log:\n%s", p.Name, log)
		}
	}
}

// TestWorkloadClustersCollectNamespaces: every workload cluster runs
// kube-controller-manager, so a deleted namespace and what it holds go away
// instead of staying Terminating.
func TestWorkloadClustersCollectNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("real containers")
	}
	for _, name := range clusterNames {
		cs := workloads[name]
		ctx := t.Context()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rn-gone"}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "rn-gone"}}
		if _, err := cs.CoreV1().ConfigMaps("rn-gone").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().Namespaces().Delete(ctx, "rn-gone", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Namespaces().Get(ctx, "rn-gone", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("cluster %s: deleted namespace still there after a minute: %v", name, err)
		}
	}
}
