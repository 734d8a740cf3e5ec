// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Roles of the clusters in a fleet.
const (
	RoleHub      = "hub"
	RoleWorkload = "workload"
)

// Cluster is one cluster of a fleet as recorded in the state file.
type Cluster struct {
	// Name is unique in the fleet: "hub", or <profile short name>-<index>.
	Name string `json:"name"`
	// Role is RoleHub or RoleWorkload.
	Role string `json:"role"`
	// Profile and Nodes describe a workload cluster's fake GPU nodes.
	Profile string `json:"profile,omitempty"`
	Nodes   int    `json:"nodes,omitempty"`
	// Region is the topology.kubernetes.io/region of its nodes.
	Region string `json:"region,omitempty"`
	// Ports it listens on; Server is its kube-apiserver URL.
	Ports  Ports  `json:"ports"`
	Server string `json:"server"`
	// Kubeconfig is an admin kubeconfig for it alone; Dir holds its data and logs.
	Kubeconfig string `json:"kubeconfig"`
	Dir        string `json:"dir"`
	// NativeGang: its kube-apiserver and kube-scheduler serve the native
	// gang API (Options.NativeGang).
	NativeGang bool `json:"nativeGang,omitempty"`
	// RealNodes are its nodes run by real kubelets (the first ones).
	RealNodes []*RealNode `json:"realNodes,omitempty"`
	// Processes are its running components, in start order.
	Processes []*Process `json:"processes"`
}

// GPUNodes returns the fake GPU nodes the cluster was created with.
func (c *Cluster) GPUNodes() ([]*corev1.Node, error) {
	p, err := LookupProfile(c.Profile)
	if err != nil {
		return nil, err
	}
	return BuildNodes(c.Name, c.Region, p, c.Nodes), nil
}

// startFunc starts one component of a cluster and records it in the state file.
type startFunc func(name, bin string, args []string) (*Process, error)

// start brings the cluster up: etcd, kube-apiserver, and for a workload
// cluster kube-scheduler, kwok and its GPU nodes, waiting for each to serve.
// Every process is recorded in the state file as soon as it starts.
func (c *Cluster) start(ctx context.Context, f *Fleet) error {
	var add startFunc = func(name, bin string, args []string) (*Process, error) {
		return f.add(c, name, filepath.Join(f.opts.BinDir, bin), args)
	}
	etcd, err := add("etcd", "etcd", etcdArgs(c))
	if err != nil {
		return err
	}
	if err := poll(ctx, 60*time.Second, 50*time.Millisecond, etcd, func() bool {
		return httpOK(ctx, nil, fmt.Sprintf("http://127.0.0.1:%d/health", c.Ports.EtcdClient))
	}); err != nil {
		return fmt.Errorf("cluster %s: etcd: %w", c.Name, err)
	}
	api, err := add("kube-apiserver", "kube-apiserver", apiserverArgs(c, f.pki(), f.agentStarter(c) != nil))
	if err != nil {
		return err
	}
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	if err := poll(ctx, 180*time.Second, 200*time.Millisecond, api, func() bool { return apiReady(ctx, cs) }); err != nil {
		return fmt.Errorf("cluster %s: kube-apiserver: %w", c.Name, err)
	}
	f.progress("cluster %s: kube-apiserver ready at %s", c.Name, c.Server)
	f.stepTo("apiserver/"+c.Name, 1, "cluster "+c.Name+": kube-apiserver ready")
	if c.Role == RoleWorkload || f.opts.ControllerManager || hubRunsNodeLifecycle(c, f.opts) {
		if err := c.startControllerManager(ctx, f, add); err != nil {
			return err
		}
	}
	if c.Role != RoleWorkload {
		return nil
	}
	return c.startWorkload(ctx, f, cs, add)
}

func (c *Cluster) startWorkload(ctx context.Context, f *Fleet, cs kubernetes.Interface, add startFunc) error {
	sargs, err := schedulerArgs(c)
	if err != nil {
		return err
	}
	sched, err := add("kube-scheduler", "kube-scheduler", sargs)
	if err != nil {
		return err
	}
	nodes, err := c.GPUNodes()
	if err != nil {
		return err
	}
	kcfg, err := writeKwokConfig(c, len(nodes)-len(c.RealNodes))
	if err != nil {
		return err
	}
	kwok, err := add("kwok", "kwok", kwokArgs(c, f.stages, f.pki(), kcfg))
	if err != nil {
		return err
	}
	if err := c.startRealNodes(ctx, f, cs); err != nil {
		return err
	}
	nodes = nodes[len(c.RealNodes):] // the real nodes took the first names
	start := time.Now()
	if err := CreateNodes(ctx, cs, nodes, f.opts.NodeWorkers); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	f.progress("cluster %s: created %d %s nodes in %s, waiting for them to turn Ready",
		c.Name, len(nodes), c.Profile, time.Since(start).Round(time.Millisecond))
	if d := mustProfile(c.Profile).DRA; d != nil {
		if err := PublishDRA(ctx, cs, nodes, d); err != nil {
			return fmt.Errorf("cluster %s: DRA driver simulator: %w", c.Name, err)
		}
		f.progress("cluster %s: published %d ResourceSlices of %s (%d GPUs each)", c.Name, len(nodes), DRADeviceClass().Name, d.PerNode)
	}
	if p := mustProfile(c.Profile); p.ComputeDomains {
		if err := c.startComputeDomains(ctx, f, cs, nodes, p.GPUsPerNode()); err != nil {
			return err
		}
	}
	if err := poll(ctx, 120*time.Second, 200*time.Millisecond, sched, func() bool {
		return httpOK(ctx, insecureClient(), fmt.Sprintf("https://127.0.0.1:%d/healthz", c.Ports.Scheduler))
	}); err != nil {
		return fmt.Errorf("cluster %s: kube-scheduler: %w", c.Name, err)
	}
	if err := poll(ctx, 300*time.Second, 500*time.Millisecond, kwok, func() bool {
		n, err := CountReadyNodes(ctx, cs)
		if err == nil {
			ready := min(max(n-len(c.RealNodes), 0), len(nodes))
			f.stepTo("nodes/"+c.Name, ready, fmt.Sprintf("cluster %s: %d/%d nodes Ready", c.Name, ready, len(nodes)))
		}
		return err == nil && n >= len(nodes)
	}); err != nil {
		return fmt.Errorf("cluster %s: waiting for %d nodes Ready: %w", c.Name, len(nodes), err)
	}
	f.progress("cluster %s: %d nodes Ready (%d GPUs)", c.Name, len(nodes), len(nodes)*mustProfile(c.Profile).GPUsPerNode())
	return nil
}

func (c *Cluster) startControllerManager(ctx context.Context, f *Fleet, add startFunc) error {
	args := controllerManagerArgs(c, f.pki())
	if hubRunsNodeLifecycle(c, f.opts) {
		args = hubControllerManagerArgs(c, f.pki(), f.opts.ControllerManager)
	}
	kcm, err := add("kube-controller-manager", "kube-controller-manager", args)
	if err != nil {
		return err
	}
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	if err := poll(ctx, 120*time.Second, 200*time.Millisecond, kcm, func() bool {
		if c.Ports.ControllerManager == 0 { // --secure-port=0: it runs once it made the default ServiceAccount
			_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
			return err == nil
		}
		return httpOK(ctx, insecureClient(), fmt.Sprintf("https://127.0.0.1:%d/healthz", c.Ports.ControllerManager))
	}); err != nil {
		return fmt.Errorf("cluster %s: kube-controller-manager: %w", c.Name, err)
	}
	return nil
}

// insecureClient probes the health endpoints of components that serve with
// self-signed certificates on loopback.
func insecureClient() *http.Client {
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback health probe of a dev component
}

// CountReadyNodes returns how many nodes of the cluster have Ready=True.
func CountReadyNodes(ctx context.Context, cs kubernetes.Interface) (int, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		for _, cond := range list.Items[i].Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n, nil
}

func mustProfile(name string) *Profile {
	p, err := LookupProfile(name)
	if err != nil {
		return &Profile{}
	}
	return p
}

func apiReady(ctx context.Context, cs kubernetes.Interface) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err == nil && string(body) == "ok"
}

func httpOK(ctx context.Context, c *http.Client, url string) bool {
	if c == nil {
		c = &http.Client{Timeout: 2 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// poll calls ok until it returns true, the timeout passes, ctx ends, or the
// process p exits (then the error carries the tail of its log).
func poll(ctx context.Context, timeout, every time.Duration, p *Process, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if ok() {
			return nil
		}
		if p != nil && !p.Alive() {
			return p.errExited()
		}
		if time.Now().After(deadline) {
			if p != nil {
				return fmt.Errorf("not ready after %s (log: %s)", timeout, p.Log)
			}
			return fmt.Errorf("condition not met after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// startComputeDomains installs the ComputeDomain part of the driver
// simulator and starts its controller for the fleet's lifetime.
func (c *Cluster) startComputeDomains(ctx context.Context, f *Fleet, cs kubernetes.Interface, nodes []*corev1.Node, channels int) error {
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := InstallComputeDomains(ctx, cs, dyn, nodes, channels); err != nil {
		return fmt.Errorf("cluster %s: ComputeDomain simulator: %w", c.Name, err)
	}
	go RunComputeDomains(f.sims, cs, dyn, 250*time.Millisecond)
	f.progress("cluster %s: ComputeDomains served, channels published on %d nodes", c.Name, len(nodes))
	return nil
}
