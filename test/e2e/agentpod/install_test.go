// SPDX-License-Identifier: Apache-2.0

package agentpod

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/shoal-dev/shoal/internal/charts"
	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/internal/freeport"
)

// agentSelector selects the chart's agent pod.
const agentSelector = "app.kubernetes.io/name=shoal-agent"

// chartValues are the shoal-agent chart's values for cluster c of the dev
// fleet: the release image (never pulled), host networking with the API
// server's loopback address (the fleet has no kube-proxy), the hub on the
// host's loopback, and free host ports for the agent's endpoints.
func chartValues(c *devfleet.Cluster, j devfleet.AgentJoin, imageRef string) (map[string]any, error) {
	u, err := url.Parse(c.Server)
	if err != nil {
		return nil, fmt.Errorf("API server %q: %w", c.Server, err)
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = freePort(j.KubeletAddress); err != nil {
			return nil, err
		}
	}
	labels := map[string]any{}
	for k, v := range j.Labels {
		labels[k] = v
	}
	repo, tag := splitRef(imageRef)
	return map[string]any{
		"image":   map[string]any{"repository": repo, "tag": tag, "pullPolicy": "Never"},
		"hub":     map[string]any{"address": j.Hub},
		"cluster": map[string]any{"name": c.Name, "labels": labels},
		"join":    map[string]any{"token": j.Token, "caHash": j.CAHash},
		"kubelet": map[string]any{"clientCA": string(j.KubeletClientCA), "address": j.KubeletAddress, "port": ports[0]},
		"ports":   map[string]any{"metrics": ports[1], "health": ports[2]},
		// No Git server in this fleet.
		"gitops":            map[string]any{"enabled": false},
		"hostNetwork":       true,
		"apiServerOverride": map[string]any{"host": u.Hostname(), "port": u.Port()},
	}, nil
}

// freePort picks an unused port on ip (internal/freeport).
func freePort(ip string) (int, error) { return freeport.Pick(ip) }

// installChart is the fleet's AgentStarter: it renders the chart for the
// cluster, creates every object as the cluster's administrator (helm
// install), and waits until the agent pod runs.
func installChart(imageRef string) devfleet.AgentStarter {
	return func(ctx context.Context, c *devfleet.Cluster, j devfleet.AgentJoin) error {
		values, err := chartValues(c, j, imageRef)
		if err != nil {
			return err
		}
		objs, err := charts.Render(filepath.Join(repoRoot(), "deploy", "charts", "shoal-agent"),
			charts.Release{Name: "shoal-agent", Namespace: j.Namespace, Values: values})
		if err != nil {
			return err
		}
		cfg, err := c.RESTConfig()
		if err != nil {
			return err
		}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
		for _, o := range objs {
			gvk := o.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return fmt.Errorf("%s %s: %w", gvk, o.GetName(), err)
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
			}
			if _, err := ri.Create(ctx, o.Unstructured, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("install %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
		}
		return waitAgentRunning(ctx, cs, j.Namespace)
	}
}

// waitAgentRunning waits until the agent pod's container runs; on failure
// the error carries the pod's status and the container's (last) log.
func waitAgentRunning(ctx context.Context, cs kubernetes.Interface, ns string) error {
	var last *corev1.Pod
	// Running, unrestarted, for 5 s: an agent that cannot reach its API
	// server or the hub exits within that.
	var since time.Time
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: agentSelector})
		if err != nil || len(pods.Items) == 0 {
			return false, nil
		}
		last = &pods.Items[0]
		for _, s := range last.Status.ContainerStatuses {
			if s.RestartCount > 0 {
				return false, fmt.Errorf("agent container restarted %d times", s.RestartCount)
			}
			if s.State.Running != nil {
				if since.IsZero() {
					since = time.Now()
				}
				return time.Since(since) >= 5*time.Second, nil
			}
		}
		since = time.Time{}
		return false, nil
	})
	if err == nil {
		return nil
	}
	if last == nil {
		return fmt.Errorf("no agent pod (%s) in %s: %w", agentSelector, ns, err)
	}
	b, _ := cs.CoreV1().Pods(ns).GetLogs(last.Name, &corev1.PodLogOptions{Container: "agent", Previous: restartedAgent(last)}).DoRaw(context.Background())
	var states []string
	for _, s := range last.Status.ContainerStatuses {
		states = append(states, fmt.Sprintf("%s restarts=%d %+v", s.Name, s.RestartCount, s.State))
	}
	return fmt.Errorf("agent pod %s/%s does not run (phase %s, %s; conditions %+v): %w\nits log:\n%s", ns, last.Name,
		last.Status.Phase, strings.Join(states, "; "), last.Status.Conditions, err, b)
}

// restartedAgent reports whether the pod's container has a previous run.
func restartedAgent(p *corev1.Pod) bool {
	for _, s := range p.Status.ContainerStatuses {
		if s.RestartCount > 0 {
			return true
		}
	}
	return false
}
