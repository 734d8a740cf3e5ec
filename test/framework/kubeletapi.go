// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The helpers below drive the kubelet API of a node through its cluster's
// API server, as kubectl does: on the hub cluster they reach a virtual node's
// kubelet endpoint (agent/vnode) and, through it, the real pod in its
// workload cluster. cfg is a client config of the cluster asked (the hub's
// admin config in the tests).

// NodePods returns the pods the kubelet of node says it runs (GET
// nodes/<node>/proxy/pods), sorted as the kubelet returns them.
func NodePods(ctx context.Context, cs kubernetes.Interface, node string) ([]corev1.Pod, error) {
	b, err := cs.CoreV1().RESTClient().Get().Resource("nodes").Name(node).SubResource("proxy").Suffix("pods").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("pods of node %s: %w (%s)", node, err, b)
	}
	var l corev1.PodList
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("pods of node %s: %w", node, err)
	}
	return l.Items, nil
}

// NodeStatsSummary returns the stats summary of node's kubelet (GET
// nodes/<node>/proxy/stats/summary), what metrics-server scrapes.
func NodeStatsSummary(ctx context.Context, cs kubernetes.Interface, node string) (*statsv1alpha1.Summary, error) {
	b, err := cs.CoreV1().RESTClient().Get().Resource("nodes").Name(node).SubResource("proxy").Suffix("stats/summary").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("stats summary of node %s: %w (%s)", node, err, b)
	}
	var s statsv1alpha1.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("stats summary of node %s: %w", node, err)
	}
	return &s, nil
}

// Exec runs cmd in a container (pods/exec) and returns its stdout and stderr.
func Exec(ctx context.Context, cfg *rest.Config, ns, pod, container string, cmd ...string) (string, string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", "", err
	}
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, req.URL())
	if err != nil {
		return "", "", err
	}
	var stdout, stderr bytes.Buffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), err
}

// Attach attaches to a running container (pods/attach), sends stdin and
// closes it, and returns what the container wrote to stdout and stderr
// until the attach ended. The container must have been started with stdin
// open (stdin: true, stdinOnce: true ends it when the stdin closes).
func Attach(ctx context.Context, cfg *rest.Config, ns, pod, container, stdin string) (string, string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", "", err
	}
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: container, Stdin: true, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, req.URL())
	if err != nil {
		return "", "", err
	}
	var stdout, stderr bytes.Buffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), err
}

// PortForward forwards a local port to port of the pod (pods/portforward,
// as `kubectl port-forward`), opens one connection, writes send, closes its
// write side and returns all the pod sent back until it closed the
// connection. An HTTP/1.0 request, for one, is answered and closed.
func PortForward(ctx context.Context, cfg *rest.Config, ns, pod string, port int, send []byte) ([]byte, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	rt, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	u := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	var out bytes.Buffer
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stop, ready, &out, &out)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		return nil, fmt.Errorf("port-forward to %s/%s:%d: %w (%s)", ns, pod, port, err, out.String())
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ports, err := pf.GetPorts()
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(time.Minute))
	}
	if _, err := conn.Write(send); err != nil {
		return nil, err
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		return nil, err
	}
	got, err := io.ReadAll(conn)
	if err != nil {
		return got, fmt.Errorf("port-forward to %s/%s:%d: %w (%s)", ns, pod, port, err, out.String())
	}
	return got, nil
}

// HostIP returns a non-loopback IPv4 address of this host. An API server
// refuses to proxy to loopback addresses (nodes/<node>/proxy answers
// "address not allowed"), so kubelet endpoints that the tests reach through
// a node proxy (/pods, /stats/summary) listen on it.
func HostIP() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() && n.IP.To4() != nil {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("no non-loopback IPv4 address on this host")
}

// AttachUntil attaches to a running container (pods/attach), sends stdin
// and keeps it open until the container's stdout shows want (then it
// detaches) or ctx ends, and returns the stdout it read. Unlike Attach it
// does not race a real container: a closed stdin can end the attach before
// the container's answer has come back.
func AttachUntil(ctx context.Context, cfg *rest.Config, ns, pod, container, stdin, want string) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: container, Stdin: true, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, req.URL())
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in, inW := io.Pipe()
	defer func() { _ = inW.Close() }()
	go func() { _, _ = io.WriteString(inW, stdin) }()
	out := &watchWriter{want: want, seen: cancel}
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in, Stdout: out, Stderr: io.Discard})
	got := out.String()
	if strings.Contains(got, want) {
		return got, nil
	}
	if err == nil {
		err = fmt.Errorf("attach ended before %q", want)
	}
	return got, err
}

// watchWriter collects output and calls seen once it contains want.
type watchWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen func()
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, _ := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.seen()
	}
	return n, nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
