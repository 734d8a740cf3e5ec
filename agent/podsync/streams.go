// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	streamhttp "k8s.io/streaming/pkg/httpstream"
)

// Logs streams a container's logs from the local API server: what it
// returns, data or error, is what the hub's `kubectl logs` gets.
func (s *Syncer) Logs(ctx context.Context, ns, pod, container string, o api.ContainerLogOpts) (io.ReadCloser, error) {
	ns, pod = s.localRef(ns, pod)
	opts := &corev1.PodLogOptions{Container: container, Follow: o.Follow, Previous: o.Previous, Timestamps: o.Timestamps}
	if o.Tail > 0 {
		t := int64(o.Tail)
		opts.TailLines = &t
	}
	if o.LimitBytes > 0 {
		l := int64(o.LimitBytes)
		opts.LimitBytes = &l
	}
	if o.SinceSeconds > 0 {
		ss := int64(o.SinceSeconds)
		opts.SinceSeconds = &ss
	}
	if !o.SinceTime.IsZero() {
		st := metav1.NewTime(o.SinceTime)
		opts.SinceTime = &st
	}
	rc, err := s.local.CoreV1().Pods(ns).GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return nil, asKubeletError(fmt.Errorf("logs of %s/%s in the workload cluster: %w", ns, pod, err))
	}
	return rc, nil
}

// asKubeletError keeps the workload cluster's answer class (not found, bad
// request) so the kubelet endpoint returns the same HTTP status to the hub.
func asKubeletError(err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return errdefs.AsNotFound(err)
	case apierrors.IsBadRequest(err), apierrors.IsInvalid(err):
		return errdefs.AsInvalidInput(err)
	}
	return err
}

// Exec runs a command in a local container through the local API server.
func (s *Syncer) Exec(ctx context.Context, ns, pod, container string, cmd []string, attach api.AttachIO) error {
	ns, pod = s.localRef(ns, pod)
	if s.localCfg == nil {
		return fmt.Errorf("exec: no workload cluster config")
	}
	req := s.local.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container, Command: cmd, TTY: attach.TTY(),
			Stdin: attach.Stdin() != nil, Stdout: attach.Stdout() != nil, Stderr: attach.Stderr() != nil && !attach.TTY(),
		}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(s.localCfg, "POST", req.URL())
	if err != nil {
		return fmt.Errorf("exec in %s/%s: %w", ns, pod, err)
	}
	return exec.StreamWithContext(ctx, streamOptions(ctx, attach))
}

// Attach attaches to a running local container through the local API
// server (pods/attach), as `kubectl attach` on the hub asks.
func (s *Syncer) Attach(ctx context.Context, ns, pod, container string, attach api.AttachIO) error {
	ns, pod = s.localRef(ns, pod)
	if s.localCfg == nil {
		return fmt.Errorf("attach: no workload cluster config")
	}
	req := s.local.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{
			Container: container, TTY: attach.TTY(),
			Stdin: attach.Stdin() != nil, Stdout: attach.Stdout() != nil, Stderr: attach.Stderr() != nil && !attach.TTY(),
		}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(s.localCfg, "POST", req.URL())
	if err != nil {
		return fmt.Errorf("attach to %s/%s: %w", ns, pod, err)
	}
	return exec.StreamWithContext(ctx, streamOptions(ctx, attach))
}

// streamOptions maps the hub side's streams onto remotecommand's: stderr is
// merged into the terminal when there is one, as the kubelet does.
func streamOptions(ctx context.Context, attach api.AttachIO) remotecommand.StreamOptions {
	opts := remotecommand.StreamOptions{Tty: attach.TTY()}
	if attach.Stdin() != nil {
		opts.Stdin = attach.Stdin()
	}
	if attach.Stdout() != nil {
		opts.Stdout = attach.Stdout()
	}
	if attach.Stderr() != nil && !attach.TTY() {
		opts.Stderr = attach.Stderr()
	}
	if attach.TTY() && attach.Resize() != nil {
		opts.TerminalSizeQueue = sizeQueue{ctx: ctx, ch: attach.Resize()}
	}
	return opts
}

// PortForward carries one forwarded connection (stream, opened by the
// hub's API server for one port of the pod) to the local pod through the
// local API server's pods/portforward, over a SPDY connection of its own. It
// returns when either side is done; an error the local side reports on the
// port's error stream (nothing listens on the port, say) is returned.
func (s *Syncer) PortForward(ctx context.Context, ns, pod string, port int32, stream io.ReadWriteCloser) error {
	ns, pod = s.localRef(ns, pod)
	defer stream.Close()
	if s.localCfg == nil {
		return fmt.Errorf("port-forward: no workload cluster config")
	}
	rt, upgrader, err := spdy.RoundTripperFor(s.localCfg)
	if err != nil {
		return fmt.Errorf("port-forward to %s/%s: %w", ns, pod, err)
	}
	u := s.local.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	conn, proto, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		return asKubeletError(fmt.Errorf("port-forward to %s/%s in the workload cluster: %w", ns, pod, err))
	}
	defer conn.Close()
	if proto != portforward.PortForwardProtocolV1Name {
		return fmt.Errorf("port-forward to %s/%s: the workload cluster chose protocol %q", ns, pod, proto)
	}
	return pipePort(ctx, conn, port, stream)
}

// pipePort opens the error and data streams of one port on conn, as
// client-go's port forwarder does, and copies between data and stream.
func pipePort(ctx context.Context, conn streamhttp.Connection, port int32, stream io.ReadWriter) error {
	h := http.Header{}
	h.Set(corev1.StreamType, corev1.StreamTypeError)
	h.Set(corev1.PortHeader, strconv.Itoa(int(port)))
	h.Set(corev1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(h)
	if err != nil {
		return fmt.Errorf("port-forward error stream: %w", err)
	}
	_ = errStream.Close() // nothing is written on it
	remoteErr := make(chan error, 1)
	go func() {
		msg, err := io.ReadAll(errStream)
		switch {
		case err != nil:
			remoteErr <- fmt.Errorf("port-forward error stream: %w", err)
		case len(msg) > 0:
			remoteErr <- fmt.Errorf("port-forward to port %d: %s", port, msg)
		default:
			remoteErr <- nil
		}
	}()
	h.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := conn.CreateStream(h)
	if err != nil {
		return fmt.Errorf("port-forward data stream: %w", err)
	}
	fromPod := make(chan struct{})
	go func() {
		_, _ = io.Copy(stream, data)
		close(fromPod)
	}()
	toPod := make(chan struct{})
	go func() {
		_, _ = io.Copy(data, stream)
		_ = data.Close() // half-close: nothing more to send
		close(toPod)
	}()
	select {
	case <-fromPod:
	case <-ctx.Done():
	case err := <-remoteErr:
		if err != nil {
			_ = data.Reset()
			return err
		}
		// A clean end of the error stream may overtake the last data
		// (streams are not ordered with each other): read the data to its end.
		select {
		case <-fromPod:
		case <-conn.CloseChan():
		case <-ctx.Done():
		}
		_ = data.Reset()
		return nil
	}
	_ = data.Reset()
	select {
	case err := <-remoteErr:
		return err
	case <-conn.CloseChan():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type sizeQueue struct {
	ctx context.Context
	ch  <-chan api.TermSize
}

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case <-q.ctx.Done():
		return nil
	case s, ok := <-q.ch:
		if !ok {
			return nil
		}
		return &remotecommand.TerminalSize{Width: s.Width, Height: s.Height}
	}
}
