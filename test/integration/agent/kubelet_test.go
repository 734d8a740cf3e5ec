// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"io"

	"context"
	"fmt"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// fakeKubelet plays the workload cluster's kubelets: it serves container
// logs, binds and starts pods on request, and finishes graceful deletions.
type fakeKubelet struct {
	srv  *httptest.Server
	port int32
}

func startFakeKubelet() *fakeKubelet {
	h := api.PodHandler(api.PodHandlerConfig{
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
	srv := httptest.NewTLSServer(h)
	_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(p)
	return &fakeKubelet{srv: srv, port: int32(port)}
}

// endpoint makes a node reachable at the fake kubelet.
func (k *fakeKubelet) endpoint(n *corev1.Node) {
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
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
