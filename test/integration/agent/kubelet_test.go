// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/shoal-dev/shoal/test/framework"
)

// fakeKubelet plays the workload cluster's kubelets: it serves container
// logs, exec, attach (echoes stdin), port-forward (greets, then echoes) and
// a stats summary of every pod bound in the cluster (fakeCPU, fakeMemory);
// the helpers below bind and start pods on request and finish graceful
// deletions.
type fakeKubelet struct {
	srv  *httptest.Server
	ip   string
	port int32
}

func startFakeKubelet(c kubernetes.Interface) (*fakeKubelet, error) {
	h := api.PodHandler(api.PodHandlerConfig{
		AttachToContainer: func(_ context.Context, ns, pod, container string, attach api.AttachIO) error {
			out := attach.Stdout()
			if out == nil {
				return fmt.Errorf("attach without stdout")
			}
			fmt.Fprintf(out, "attached to %s/%s/%s\n", ns, pod, container)
			if in := attach.Stdin(); in != nil {
				_, _ = io.Copy(out, in)
			}
			return nil
		},
		PortForward: func(_ context.Context, ns, pod string, port int32, stream io.ReadWriteCloser) error {
			defer stream.Close()
			fmt.Fprintf(stream, "port %d of %s/%s\n", port, ns, pod)
			_, err := io.Copy(stream, stream)
			return err
		},
		GetStatsSummary: func(ctx context.Context) (*statsv1alpha1.Summary, error) {
			pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			now := metav1.Now()
			s := &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: "fake"}}
			for _, p := range pods.Items {
				if p.Spec.NodeName == "" {
					continue
				}
				cpu, mem := fakeCPU(p.Name), fakeMemory(p.Name)
				s.Pods = append(s.Pods, statsv1alpha1.PodStats{
					PodRef: statsv1alpha1.PodReference{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID)}, StartTime: now,
					CPU:    &statsv1alpha1.CPUStats{Time: now, UsageNanoCores: &cpu},
					Memory: &statsv1alpha1.MemoryStats{Time: now, WorkingSetBytes: &mem},
				})
			}
			return s, nil
		},
		GetContainerLogs: func(_ context.Context, ns, pod, container string, _ api.ContainerLogOpts) (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(fmt.Sprintf("hello from %s/%s container %s\n", ns, pod, container))), nil
		},
		RunInContainer: func(_ context.Context, ns, pod, container string, cmd []string, attach api.AttachIO) error {
			if out := attach.Stdout(); out != nil {
				fmt.Fprintf(out, "ran %v in %s/%s/%s\n", cmd, ns, pod, container)
			}
			return nil
		},
		GetPods:               func(context.Context) ([]*corev1.Pod, error) { return nil, nil },
		GetPodsFromKubernetes: func(context.Context) ([]*corev1.Pod, error) { return nil, nil },
	}, false)
	// On a host address, not loopback: the API server proxies nodes/<n>/proxy
	// (the stats summary) to no loopback address.
	ip, err := framework.HostIP()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, err
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = l
	srv.StartTLS()
	_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(p)
	return &fakeKubelet{srv: srv, ip: ip, port: int32(port)}, nil
}

// fakeCPU and fakeMemory are the usage the fake kubelet reports for a pod.
func fakeCPU(pod string) uint64    { return 1000 * uint64(len(pod)) }
func fakeMemory(pod string) uint64 { return 1 << 20 * uint64(len(pod)) }

// endpoint makes a node reachable at the fake kubelet.
func (k *fakeKubelet) endpoint(n *corev1.Node) {
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: k.ip}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = k.port
}

// reapDeleted force-deletes pods whose graceful deletion started, as a
// kubelet does once their containers stop; it runs until ctx ends.
func reapDeleted(ctx context.Context, c kubernetes.Interface) {
	for {
		pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					zero := int64(0)
					_ = c.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// bindAndRun binds a local pod to node and reports it Running.
func bindAndRun(ctx context.Context, c kubernetes.Interface, ns, name, node string) error {
	err := c.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	for _, ctr := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: ctr.Name, Image: ctr.Image,
			Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	_, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}
