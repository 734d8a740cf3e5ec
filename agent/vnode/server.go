// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// backend is what a kubelet endpoint needs of the workload cluster
// (podsync.Syncer).
type backend interface {
	statsSource
	Logs(ctx context.Context, ns, pod, container string, o api.ContainerLogOpts) (io.ReadCloser, error)
	Exec(ctx context.Context, ns, pod, container string, cmd []string, attach api.AttachIO) error
	Attach(ctx context.Context, ns, pod, container string, attach api.AttachIO) error
	PortForward(ctx context.Context, ns, pod string, port int32, stream io.ReadWriteCloser) error
}

// endpoint is the kubelet API of one virtual node, on a port of its own as
// a real kubelet's: /pods and /stats/summary say nothing of which node they
// are asked for, so the port tells. It serves only the pods bound to its
// node: every pod route answers 404 for any other pod, as the kubelet of a
// node knows nothing of the pods of another, and only the members Shoal
// placed (a pod someone else bound to the node is not found either). With
// an authorizer, every request must come with a verified client
// certificate whose user the hub API server allows the request (auth.go).
type endpoint struct {
	node    string
	members *members
	b       backend
	started time.Time
	// auth, when set, guards every route; nil serves any client
	// (--kubelet-insecure-allow-any-client).
	auth *Authorizer
}

// handler returns the kubelet routes of the endpoint.
func (e *endpoint) handler() http.Handler {
	list := func(ctx context.Context) ([]*corev1.Pod, error) { return e.members.served() }
	return api.PodHandler(api.PodHandlerConfig{
		GetContainerLogs: func(ctx context.Context, ns, pod, container string, o api.ContainerLogOpts) (io.ReadCloser, error) {
			if err := e.check(ns, pod); err != nil {
				return nil, err
			}
			return e.b.Logs(ctx, ns, pod, container, o)
		},
		RunInContainer:        e.exec,
		AttachToContainer:     e.attach,
		PortForward:           e.portForward,
		GetPods:               list,
		GetPodsFromKubernetes: list,
		GetStatsSummary: func(ctx context.Context) (*statsv1alpha1.Summary, error) {
			pods, err := e.members.served()
			if err != nil {
				return nil, err
			}
			return summarize(ctx, e.node, e.started, pods, e.b), nil
		},
		StreamIdleTimeout: 30 * time.Minute, StreamCreationTimeout: 30 * time.Second,
	}, false)
}

// check refuses (not found) a pod that is not a member placed on the node
// or whose local pod is not the agent's copy of it (same hub UID): the
// streams reach the workload cluster's pod of the same namespace and name,
// which must never be a pod the agent did not create.
func (e *endpoint) check(ns, pod string) error {
	hp, err := e.members.check(ns, pod)
	if err != nil {
		return err
	}
	if _, ok := e.b.LocalPodOf(hp); !ok {
		return errdefs.NotFound(fmt.Sprintf("pod %s/%s has no local pod in the workload cluster", ns, pod))
	}
	return nil
}

// exec, attach and portForward reach the workload cluster for members only.
func (e *endpoint) exec(ctx context.Context, ns, pod, container string, cmd []string, attach api.AttachIO) error {
	if err := e.check(ns, pod); err != nil {
		return err
	}
	return e.b.Exec(ctx, ns, pod, container, cmd, attach)
}

func (e *endpoint) attach(ctx context.Context, ns, pod, container string, attach api.AttachIO) error {
	if err := e.check(ns, pod); err != nil {
		return err
	}
	return e.b.Attach(ctx, ns, pod, container, attach)
}

func (e *endpoint) portForward(ctx context.Context, ns, pod string, port int32, stream io.ReadWriteCloser) error {
	if err := e.check(ns, pod); err != nil {
		_ = stream.Close()
		return err
	}
	return e.b.PortForward(ctx, ns, pod, port, stream)
}

// nodeAddr is the listen address of the i-th virtual node (from 0): the
// configured port plus i, or a port of the kernel's choice when it is 0.
func nodeAddr(listen string, i int) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("kubelet listen address %q: %w", listen, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return "", fmt.Errorf("kubelet listen address %q: bad port", listen)
	}
	if p == 0 {
		return net.JoinHostPort(host, "0"), nil
	}
	if p+i > 65535 {
		return "", fmt.Errorf("kubelet listen address %q: no port left for virtual node %d", listen, i+1)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+i)), nil
}

// serve serves the endpoint on l until ctx ends.
func (e *endpoint) serve(ctx context.Context, l net.Listener) error {
	h := e.handler()
	if e.auth != nil {
		h = e.auth.guard(e.node, h)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	klog.FromContext(ctx).Info("Serving the kubelet API", "node", e.node, "addr", l.Addr().String())
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
