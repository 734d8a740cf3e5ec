// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/shoal-dev/shoal/agent"
	"github.com/shoal-dev/shoal/agent/hubclient"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/test/framework"
)

const (
	clusterName = "eu1"
	h100Node    = "shoal-eu1-h100-80gb"
	migNode     = "shoal-eu1-a100-80gb-mig-1g-10gb"
	leaseSecs   = 6
)

// hubNS is where the hub places the cluster's members on the hub cluster.
var hubNS = v1alpha1.ClusterNamespace(clusterName)

type runningAgent struct {
	cancel context.CancelFunc
	done   chan error
}

func startAgent(t *testing.T, token string) *runningAgent {
	t.Helper()
	// The kubelet endpoints on a host address: the hub's API server proxies
	// nodes/<n>/proxy (/pods, /stats/summary) to no loopback address.
	ip, err := framework.HostIP()
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{
		HubAddress: hub.addr, Token: token, CAHash: hub.caHash(), Cluster: clusterName,
		Local: restConfigCopy(workCP.Config), Labels: map[string]string{"region": "eu"},
		HeartbeatInterval: time.Second, KubeletListen: net.JoinHostPort(ip, "0"), KubeletAddress: ip,
		KubeletClientCAFile:  hubCP.KubeletClientCA.CAFile,
		LeaseDurationSeconds: leaseSecs, Version: "v0.0.0-it", NodeFailureGrace: nodeFailureGrace,
		GitOps: agent.GitOps(t.TempDir(), "shoal-system", time.Second),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningAgent{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	return r
}

func (r *runningAgent) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("agent returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not stop within 30s")
	}
}

func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

func gpuQty(rl corev1.ResourceList, r string) int64 {
	q := rl[corev1.ResourceName(r)]
	return q.Value()
}

// teamA is the workload-cluster namespace of queue team-a, where the agent
// runs the members hubPod makes (their hub pods are in the cluster's hub
// namespace, hubNS).
var teamA = v1alpha1.LocalMemberNamespace("team-a")

// hubPod is a hub member pod of queue team-a with annotations ann besides
// the queue.
func hubPod(name, node string, ann map[string]string, gpus int64) *corev1.Pod {
	a := map[string]string{v1alpha1.AnnotationQueue: "team-a"}
	for k, v := range ann {
		a[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: hubNS, Annotations: a, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{NodeName: node,
			Tolerations: []corev1.Toleration{{Key: v1alpha1.TaintVirtual, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{fedinv.ResourceGPU: *resourceQty(gpus)}}}}},
	}
}

// TestAgent runs one agent through its life: registration, virtual nodes,
// inventory, pods both ways, logs, restart with stored credentials, an
// unreachable workload cluster, and death.
func TestAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two kube-apiservers")
	}
	ctx := t.Context()
	kubelet, err := startFakeKubelet(work)
	if err != nil {
		t.Fatal(err)
	}
	defer kubelet.srv.Close()
	for _, n := range []*corev1.Node{
		gpuNode("n1", "NVIDIA-H100-80GB-HBM3", "r1", map[string]int64{fedinv.ResourceGPU: 8}),
		gpuNode("n2", "NVIDIA-H100-80GB-HBM3", "r1", map[string]int64{fedinv.ResourceGPU: 8}),
		gpuNode("m1", "NVIDIA-A100-SXM4-80GB", "r2", map[string]int64{"nvidia.com/mig-1g.10gb": 7}),
		gpuNode("cpu1", "", "r2", nil),
	} {
		kubelet.endpoint(n)
		if err := createNode(ctx, work, n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := work.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shoal-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustCreateNS(ctx, t, hubAdmin, hubNS) // the issuer's too, once the agent registers
	reapCtx, stopReap := context.WithCancel(ctx)
	defer stopReap()
	go reapDeleted(reapCtx, work)

	a := startAgent(t, hub.token)
	defer func() { a.cancel() }()

	t.Run("registration", func(t *testing.T) {
		eventually(t, 30*time.Second, "registered", func(context.Context) (bool, error) { return hub.registrations() == 1, nil })
		ks, err := work.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := hub.registered[0]; got.ClusterUid != string(ks.UID) || got.ClusterName != clusterName || got.Labels["region"] != "eu" {
			t.Errorf("register request = %+v", got)
		}
		// The agent stores its credentials after the hub answered, which
		// the hub's count of registrations does not wait for.
		eventually(t, 10*time.Second, "credentials stored", func(ctx context.Context) (bool, error) {
			sec, err := work.CoreV1().Secrets("shoal-system").Get(ctx, hubclient.SecretName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if len(sec.Data["tls.key"]) == 0 || len(sec.Data["hub.kubeconfig"]) == 0 {
				return false, errors.New("the secret lacks tls.key or hub.kubeconfig")
			}
			return true, nil
		})
	})

	t.Run("virtual nodes", func(t *testing.T) {
		var n *corev1.Node
		eventually(t, 60*time.Second, "h100 virtual node Ready", func(ctx context.Context) (bool, error) {
			var err error
			n, err = hubAdmin.CoreV1().Nodes().Get(ctx, h100Node, metav1.GetOptions{})
			return err == nil && nodeReady(n) == corev1.ConditionTrue, err
		})
		if c, a := gpuQty(n.Status.Capacity, fedinv.ResourceGPU), gpuQty(n.Status.Allocatable, fedinv.ResourceGPU); c != 16 || a != 16 {
			t.Errorf("capacity/allocatable = %d/%d, want 16/16", c, a)
		}
		for k, v := range map[string]string{v1alpha1.LabelCluster: clusterName, v1alpha1.LabelVirtual: "true", "type": "virtual-kubelet",
			fedinv.LabelGPUProduct: "NVIDIA-H100-80GB-HBM3", "region": "eu"} {
			if n.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
			}
		}
		hasTaint := false
		for _, tn := range n.Spec.Taints {
			hasTaint = hasTaint || tn.Key == v1alpha1.TaintVirtual && tn.Effect == corev1.TaintEffectNoSchedule
		}
		if !hasTaint {
			t.Errorf("taints = %v", n.Spec.Taints)
		}
		if n.Status.DaemonEndpoints.KubeletEndpoint.Port == 0 {
			t.Error("no kubelet endpoint")
		}
		for k, v := range map[string]string{v1alpha1.AnnotationPoolNodes: "2", v1alpha1.AnnotationPoolFree: "16",
			v1alpha1.AnnotationPoolLargestNodeFree: "8", v1alpha1.AnnotationPoolNodesByFree: "8:2"} {
			if n.Annotations[k] != v {
				t.Errorf("annotation %s = %q, want %q", k, n.Annotations[k], v)
			}
		}
		var m *corev1.Node
		eventually(t, 30*time.Second, "MIG virtual node", func(ctx context.Context) (bool, error) {
			var err error
			m, err = hubAdmin.CoreV1().Nodes().Get(ctx, migNode, metav1.GetOptions{})
			return err == nil && gpuQty(m.Status.Capacity, "nvidia.com/mig-1g.10gb") == 7, err
		})
		// Each virtual node has a kubelet endpoint of its own: /pods and
		// /stats/summary do not say which node they are asked for.
		if p := m.Status.DaemonEndpoints.KubeletEndpoint.Port; p == 0 || p == n.Status.DaemonEndpoints.KubeletEndpoint.Port {
			t.Errorf("kubelet ports %d and %d, want two", n.Status.DaemonEndpoints.KubeletEndpoint.Port, p)
		}
		eventually(t, 30*time.Second, "node lease", func(ctx context.Context) (bool, error) {
			_, err := hubAdmin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, h100Node, metav1.GetOptions{})
			return err == nil, err
		})
	})

	t.Run("gitops status reaches the hub", func(t *testing.T) {
		eventually(t, 30*time.Second, "GitOps status report", func(context.Context) (bool, error) {
			hub.mu.Lock()
			defer hub.mu.Unlock()
			return hub.gitopsReports > 0, nil
		})
	})

	t.Run("inventory report", func(t *testing.T) {
		eventually(t, 30*time.Second, "inventory at the hub", func(context.Context) (bool, error) {
			inv, ok := hub.latest(clusterName)
			return ok && len(inv.Nodes) == 3 && inv.FreeGPUs() == 16 && inv.Labels["region"] == "eu", nil
		})
	})

	t.Run("pod runs in the workload cluster", func(t *testing.T) {
		p := placedPod("trainer", h100Node, map[string]string{v1alpha1.AnnotationTargetNode: "n1"}, 8)
		if _, err := hubAdmin.CoreV1().Pods(hubNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var local *corev1.Pod
		eventually(t, 30*time.Second, "local pod", func(ctx context.Context) (bool, error) {
			var err error
			local, err = work.CoreV1().Pods(teamA).Get(ctx, "trainer", metav1.GetOptions{})
			return err == nil, err
		})
		ns, err := work.CoreV1().Namespaces().Get(ctx, teamA, metav1.GetOptions{})
		if err != nil || ns.Labels[v1alpha1.LabelManaged] != "true" || ns.Labels[v1alpha1.PodSecurityEnforceLabel] != "baseline" {
			t.Errorf("namespace not created as managed with the default pod-security level enforced: %v %v", err, ns.Labels)
		}
		tolerates := false
		for _, tl := range local.Spec.Tolerations {
			tolerates = tolerates || tl.Key == v1alpha1.TaintVirtual
		}
		if local.Spec.NodeName != "" || tolerates {
			t.Errorf("hub-only fields kept: nodeName=%q tolerations=%v", local.Spec.NodeName, local.Spec.Tolerations)
		}
		aff := local.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(aff) != 1 || aff[0].MatchFields[0].Values[0] != "n1" {
			t.Errorf("affinity = %+v", aff)
		}
		if err := bindAndRun(ctx, work, teamA, "trainer", "n1"); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "hub pod Running", func(ctx context.Context) (bool, error) {
			hp, err := hubAdmin.CoreV1().Pods(hubNS).Get(ctx, "trainer", metav1.GetOptions{})
			return err == nil && hp.Status.Phase == corev1.PodRunning, err
		})
	})

	t.Run("a GPU pod and a cordon change the free GPUs", func(t *testing.T) {
		eventually(t, 30*time.Second, "8 GPUs used", func(context.Context) (bool, error) {
			inv, _ := hub.latest(clusterName)
			return inv.FreeGPUs() == 8, nil
		})
		n2, err := work.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n2.Spec.Unschedulable = true
		if _, err := work.CoreV1().Nodes().Update(ctx, n2, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "cordon reported", func(context.Context) (bool, error) {
			inv, _ := hub.latest(clusterName)
			return inv.FreeGPUs() == 0, nil
		})
		// Nothing is free: allocatable is what the member holds, so that
		// describe node's allocatable minus allocated reads 0 free.
		eventually(t, 30*time.Second, "virtual node allocatable 8", func(ctx context.Context) (bool, error) {
			n, err := hubAdmin.CoreV1().Nodes().Get(ctx, h100Node, metav1.GetOptions{})
			return err == nil && gpuQty(n.Status.Allocatable, fedinv.ResourceGPU) == 8 &&
				n.Annotations[v1alpha1.AnnotationPoolNodesByFree] == "0:2" && n.Annotations[v1alpha1.AnnotationPoolFree] == "0", err
		})
	})

	t.Run("a virtual node deleted on the hub comes back", func(t *testing.T) {
		if err := hubAdmin.CoreV1().Nodes().Delete(ctx, h100Node, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		n2, err := work.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n2.Spec.Unschedulable = false // a change makes the agent push the node's status
		if _, err := work.CoreV1().Nodes().Update(ctx, n2, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "virtual node registered again", func(ctx context.Context) (bool, error) {
			n, err := hubAdmin.CoreV1().Nodes().Get(ctx, h100Node, metav1.GetOptions{})
			return err == nil && gpuQty(n.Status.Allocatable, fedinv.ResourceGPU) == 16, err
		})
	})

	t.Run("logs through the hub", func(t *testing.T) {
		want, err := work.CoreV1().Pods(teamA).GetLogs("trainer", &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("local logs: %v", err)
		}
		rc, err := hubAdmin.CoreV1().Pods(hubNS).GetLogs("trainer", &corev1.PodLogOptions{Container: "main"}).Stream(ctx)
		if err != nil {
			t.Fatalf("hub logs: %v", err)
		}
		got, _ := io.ReadAll(rc)
		_ = rc.Close()
		if string(got) != string(want) || !strings.Contains(string(got), "hello from "+teamA+"/trainer") {
			t.Errorf("hub logs = %q, workload logs = %q", got, want)
		}
		// An error of the workload cluster comes back as such.
		_, localErr := work.CoreV1().Pods(teamA).GetLogs("trainer", &corev1.PodLogOptions{Container: "nope"}).DoRaw(ctx)
		body, err := hubAdmin.CoreV1().Pods(hubNS).GetLogs("trainer", &corev1.PodLogOptions{Container: "nope"}).DoRaw(ctx)
		if localErr == nil || err == nil || statusCode(err) != statusCode(localErr) {
			t.Errorf("hub logs of a missing container: %v (%q), workload cluster said %v", err, body, localErr)
		}
		t.Logf("hub: %v; workload: %v", err, localErr)
	})

	t.Run("exec through the hub", func(t *testing.T) {
		req := hubAdmin.CoreV1().RESTClient().Post().Resource("pods").Namespace(hubNS).Name("trainer").SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Container: "main", Command: []string{"echo", "hi"}, Stdout: true, Stderr: true},
				scheme.ParameterCodec)
		exec, err := remotecommand.NewSPDYExecutor(hubCP.Config, "POST", req.URL())
		if err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
			t.Fatalf("exec: %v (stderr %q)", err, stderr.String())
		}
		if want := "ran [echo hi] in " + teamA + "/trainer/main"; !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout = %q, want %q", stdout.String(), want)
		}
	})

	t.Run("kubelet API of a virtual node: pods, stats, attach, port-forward", func(t *testing.T) {
		mig := placedPod("mig-worker", migNode, nil, 0)
		mig.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/mig-1g.10gb": *resourceQty(1)}
		if _, err := hubAdmin.CoreV1().Pods(hubNS).Create(ctx, mig, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() {
			zero := int64(0)
			_ = hubAdmin.CoreV1().Pods(hubNS).Delete(ctx, "mig-worker", metav1.DeleteOptions{GracePeriodSeconds: &zero})
			waitLocalGone(t, "mig-worker")
		}()
		trainer, err := hubAdmin.CoreV1().Pods(hubNS).Get(ctx, "trainer", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		podsOf := func(ctx context.Context, node string) (string, error) {
			pods, err := framework.NodePods(ctx, hubAdmin, node)
			var names []string
			for _, p := range pods {
				names = append(names, p.Namespace+"/"+p.Name+"@"+string(p.UID))
			}
			return strings.Join(names, ","), err
		}
		eventually(t, 30*time.Second, "/pods lists exactly each node's members", func(ctx context.Context) (bool, error) {
			h, err := podsOf(ctx, h100Node)
			if err != nil {
				return false, err
			}
			mg, err := podsOf(ctx, migNode)
			return h == hubNS+"/trainer@"+string(trainer.UID) && strings.HasPrefix(mg, hubNS+"/mig-worker@") && !strings.Contains(mg, ","), err
		})

		sum, err := framework.NodeStatsSummary(ctx, hubAdmin, h100Node)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Node.NodeName != h100Node || len(sum.Pods) != 1 || sum.Pods[0].PodRef.UID != string(trainer.UID) ||
			sum.Pods[0].PodRef.Name != "trainer" || *sum.Pods[0].CPU.UsageNanoCores != fakeCPU("trainer") {
			t.Errorf("stats summary of %s = %+v, want the trainer's stats under its hub UID", h100Node, sum)
		}
		if sum.Node.CPU == nil || *sum.Node.CPU.UsageNanoCores != fakeCPU("trainer") || *sum.Node.Memory.WorkingSetBytes != fakeMemory("trainer") {
			t.Errorf("node section = %+v, want the members' sum", sum.Node)
		}
		// The MIG member's local pod is not bound to a node: it has no stats, and none are made up.
		if sum, err := framework.NodeStatsSummary(ctx, hubAdmin, migNode); err != nil || len(sum.Pods) != 0 || sum.Node.CPU != nil {
			t.Errorf("stats summary of %s = %+v, %v, want no pods and no figures", migNode, sum, err)
		}

		out, errOut, err := framework.Attach(ctx, hubCP.Config, hubNS, "trainer", "main", "hello through the hub\n")
		if err != nil || out != "attached to "+teamA+"/trainer/main\nhello through the hub\n" {
			t.Errorf("attach: %v, stdout %q, stderr %q", err, out, errOut)
		}

		got, err := framework.PortForward(ctx, hubCP.Config, hubNS, "trainer", 8080, []byte("ping\n"))
		if err != nil || string(got) != "port 8080 of "+teamA+"/trainer\nping\n" {
			t.Errorf("port-forward: %v, got %q", err, got)
		}

		// A node's endpoint knows only its own members, as a kubelet does.
		_, err = hubAdmin.CoreV1().RESTClient().Get().Resource("nodes").Name(h100Node).SubResource("proxy").
			Suffix("containerLogs/" + hubNS + "/mig-worker/main").DoRaw(ctx)
		if !apierrors.IsNotFound(err) {
			t.Errorf("logs of another node's pod through %s: %v, want not found", h100Node, err)
		}
	})

	t.Run("kubelet endpoint: client certificates, authorization, placed members only", func(t *testing.T) {
		testKubeletAuth(ctx, t)
	})

	t.Run("deleting on the hub deletes locally", func(t *testing.T) {
		grace := int64(2) // virtual-kubelet force-deletes the hub pod after the grace period
		if err := hubAdmin.CoreV1().Pods(hubNS).Delete(ctx, "trainer", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, "local pod gone", func(ctx context.Context) (bool, error) {
			_, err := work.CoreV1().Pods(teamA).Get(ctx, "trainer", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		eventually(t, 60*time.Second, "hub pod gone", func(ctx context.Context) (bool, error) {
			_, err := hubAdmin.CoreV1().Pods(hubNS).Get(ctx, "trainer", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})

	t.Run("a hub pod deleted outright removes its local pod", func(t *testing.T) {
		if _, err := hubAdmin.CoreV1().Pods(hubNS).Create(ctx, hubPod("quick", h100Node, nil, 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitLocal(t, "quick")
		zero := int64(0)
		if err := hubAdmin.CoreV1().Pods(hubNS).Delete(ctx, "quick", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		waitLocalGone(t, "quick")
	})

	t.Run("a local pod deleted behind the agent's back is reported", func(t *testing.T) {
		if _, err := hubAdmin.CoreV1().Pods(hubNS).Create(ctx, hubPod("victim", h100Node, nil, 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "local victim", func(ctx context.Context) (bool, error) {
			_, err := work.CoreV1().Pods(teamA).Get(ctx, "victim", metav1.GetOptions{})
			return err == nil, err
		})
		if err := work.CoreV1().Pods(teamA).Delete(ctx, "victim", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "hub pod Failed/LocalPodDeleted", func(ctx context.Context) (bool, error) {
			hp, err := hubAdmin.CoreV1().Pods(hubNS).Get(ctx, "victim", metav1.GetOptions{})
			return err == nil && hp.Status.Phase == corev1.PodFailed && hp.Status.Reason == v1alpha1.ReasonLocalPodDeleted, err
		})
		eventually(t, 30*time.Second, "event on the hub pod", func(ctx context.Context) (bool, error) {
			evs, err := hubAdmin.CoreV1().Events(hubNS).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=victim,reason=" + v1alpha1.ReasonLocalPodDeleted})
			return err == nil && len(evs.Items) > 0, err
		})
		if _, err := work.CoreV1().Pods(teamA).Get(ctx, "victim", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the local pod was recreated: %v", err)
		}
	})

	t.Run("restart reuses the stored credentials and cleans up orphans", func(t *testing.T) {
		if _, err := hubAdmin.CoreV1().Pods(hubNS).Create(ctx, hubPod("orphan", h100Node, nil, 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitLocal(t, "orphan")
		a.stop(t)
		zero := int64(0)
		if err := hubAdmin.CoreV1().Pods(hubNS).Delete(ctx, "orphan", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		a = startAgent(t, "") // no token: only the stored credentials can work
		eventually(t, 30*time.Second, "heartbeat after restart", func(context.Context) (bool, error) {
			hub.mu.Lock()
			defer hub.mu.Unlock()
			return time.Since(hub.beats[clusterName]) < 500*time.Millisecond, nil
		})
		if n := hub.registrations(); n != 1 {
			t.Errorf("registrations = %d, want 1", n)
		}
		waitLocalGone(t, "orphan") // its hub pod went away while the agent was down
	})

	t.Run("a member's node turning NotReady fails its hub pod", func(t *testing.T) { testNodeNotReady(ctx, t) })
	t.Run("a newer epoch removes the stale members", func(t *testing.T) { testStaleMembersRemoved(ctx, t) })
	t.Run("a restarted agent refuses a stale epoch", func(t *testing.T) { testRestartKeepsEpochs(ctx, t, &a) })

	t.Run("an unreachable workload cluster makes the nodes NotReady", func(t *testing.T) {
		if err := workCP.Stop(); err != nil {
			t.Logf("stopping the workload API server: %v", err)
		}
		stopReap()
		eventually(t, 60*time.Second, "virtual node NotReady", func(ctx context.Context) (bool, error) {
			n, err := hubAdmin.CoreV1().Nodes().Get(ctx, h100Node, metav1.GetOptions{})
			return err == nil && nodeReady(n) == corev1.ConditionFalse, err
		})
	})

	t.Run("a dead agent's leases expire", func(t *testing.T) {
		a.cancel()
		if err := <-a.done; err != nil {
			t.Errorf("agent returned %v", err)
		}
		eventually(t, 3*leaseSecs*time.Second, "lease expired", func(ctx context.Context) (bool, error) {
			l, err := hubAdmin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, h100Node, metav1.GetOptions{})
			return err == nil && leaseExpired(l, time.Now()), err
		})
	})
}

func leaseExpired(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return now.After(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

func statusCode(err error) int32 {
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status().Code
	}
	return 0
}

func waitLocal(t *testing.T, name string) {
	t.Helper()
	eventually(t, 30*time.Second, "local pod "+name, func(ctx context.Context) (bool, error) {
		_, err := work.CoreV1().Pods(teamA).Get(ctx, name, metav1.GetOptions{})
		return err == nil, err
	})
}

func waitLocalGone(t *testing.T, name string) {
	t.Helper()
	eventually(t, 30*time.Second, "local pod "+name+" deleted", func(ctx context.Context) (bool, error) {
		_, err := work.CoreV1().Pods(teamA).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
