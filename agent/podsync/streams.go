// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"
	"fmt"
	"io"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

// Logs streams a container's logs from the local API server: what it
// returns, data or error, is what the hub's `kubectl logs` gets.
func (s *Syncer) Logs(ctx context.Context, ns, pod, container string, o api.ContainerLogOpts) (io.ReadCloser, error) {
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
	return exec.StreamWithContext(ctx, opts)
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
