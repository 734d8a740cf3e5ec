// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"context"
	"crypto/x509"
	"fmt"
	"sync"
	"time"

	vknode "github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent/podsync"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// HealthFunc reports whether the agent reaches its own cluster.
type HealthFunc func() (ok bool, msg string)

// Config configures the virtual nodes of one cluster.
type Config struct {
	// Cluster is the cluster's federation name.
	Cluster string
	// Hub is the scoped client of the hub management cluster.
	Hub kubernetes.Interface
	// Syncer runs the pods in the workload cluster.
	Syncer *podsync.Syncer
	// Labels are the cluster labels copied onto every virtual node.
	Labels map[string]string
	// Address is where the hub's API server reaches the kubelet endpoints
	// (the nodes' InternalIP).
	Address string
	// Listen is the listen address of the first node's kubelet endpoint
	// (default ":10250"); each further node listens on the next port, or on
	// a port of the kernel's choice when the port is 0.
	Listen string
	// ClientCAs, when set, must have signed the client certificate of every
	// kubelet endpoint request (the hub API server's
	// --kubelet-client-certificate), and the hub API server must allow the
	// certificate's user each request by SubjectAccessReview (auth.go).
	ClientCAs *x509.CertPool
	// AllowAnyClient serves any client, unauthenticated and unauthorized,
	// when ClientCAs is nil; without either the endpoints refuse to start
	// (ErrNoClientCA).
	AllowAnyClient bool
	// AuthorizedTTL and UnauthorizedTTL are how long an allowed and a
	// denied SubjectAccessReview answer is reused (defaults
	// DefaultAuthorizedTTL, DefaultUnauthorizedTTL).
	AuthorizedTTL, UnauthorizedTTL time.Duration
	// LeaseDurationSeconds of the node leases (default 40).
	LeaseDurationSeconds int32
	// Version is the agent version shown as the kubelet version.
	Version string
	// Health is polled every HealthInterval (default 5 s) for the Ready condition.
	Health         HealthFunc
	HealthInterval time.Duration
	// Workers per pod controller (default 16: a gang's members on one
	// virtual node are created, committed and reported concurrently).
	Workers int
}

// Manager runs one virtual-kubelet node per pool.
type Manager struct {
	cfg      Config
	recorder record.EventRecorder
	eb       record.EventBroadcaster
	mu       sync.Mutex
	nodes    map[string]*nodeProvider
	auth     *Authorizer
	wg       sync.WaitGroup
	errs     chan error
}

// New returns a Manager.
func New(cfg Config) *Manager {
	if cfg.Workers == 0 {
		cfg.Workers = 16
	}
	if cfg.Listen == "" {
		cfg.Listen = ":10250"
	}
	if cfg.HealthInterval == 0 {
		cfg.HealthInterval = 5 * time.Second
	}
	if cfg.LeaseDurationSeconds == 0 {
		cfg.LeaseDurationSeconds = vknode.DefaultLeaseDuration
	}
	eb := record.NewBroadcaster()
	rec := eb.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "shoal-agent", Host: cfg.Cluster})
	m := &Manager{cfg: cfg, eb: eb, recorder: rec, nodes: map[string]*nodeProvider{}, errs: make(chan error, 1)}
	if cfg.ClientCAs != nil {
		m.auth = NewAuthorizer(cfg.Hub.AuthorizationV1().SubjectAccessReviews(), cfg.AuthorizedTTL, cfg.UnauthorizedTTL)
	}
	return m
}

// Recorder records events on hub objects.
func (m *Manager) Recorder() record.EventRecorder { return m.recorder }

// Run publishes the pools of every inventory received on updates until ctx
// ends; pools that disappear keep their node with zero capacity.
func (m *Manager) Run(ctx context.Context, updates <-chan fedinv.Cluster) error {
	log := klog.FromContext(ctx).WithName("vnode")
	ctx = klog.NewContext(ctx, log)
	if m.cfg.ClientCAs == nil && !m.cfg.AllowAnyClient {
		return ErrNoClientCA
	}
	if m.cfg.ClientCAs == nil {
		log.Info("WARNING: the kubelet endpoints serve any client without authentication or authorization: " +
			"anyone who reaches their ports can read logs of, exec, attach and port-forward into the members; set --kubelet-client-ca")
	}
	m.eb.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: m.cfg.Hub.CoreV1().Events("")})
	defer m.eb.Shutdown()
	defer m.wg.Wait()
	select {
	case <-ctx.Done():
		return nil
	case <-m.cfg.Syncer.Synced():
	}
	tick := time.NewTicker(m.cfg.HealthInterval)
	defer tick.Stop()
	ready, msg := m.health()
	var pools []fedinv.Pool
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-m.errs:
			return err
		case c := <-updates:
			pools = c.Pools()
		case <-tick.C:
			ready, msg = m.health()
		}
		if err := m.apply(ctx, pools, ready, msg); err != nil {
			return err
		}
	}
}

func (m *Manager) health() (bool, string) {
	if m.cfg.Health == nil {
		return true, ""
	}
	return m.cfg.Health()
}

// apply starts nodes for new pools and updates every node's status.
func (m *Manager) apply(ctx context.Context, pools []fedinv.Pool, ready bool, msg string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	for _, p := range pools {
		seen[p.Name] = true
		np, ok := m.nodes[p.Name]
		if !ok {
			var err error
			if np, err = m.start(ctx, p); err != nil {
				return err
			}
			m.nodes[p.Name] = np
		}
		np.set(p, ready, msg)
	}
	for name, np := range m.nodes {
		if !seen[name] {
			gone := np.pool
			gone.Capacity, gone.Allocatable, gone.Free, gone.LargestNodeFree, gone.Nodes = 0, 0, 0, 0, 0
			gone.NodesByFree = nil
			np.set(gone, ready, msg)
		}
	}
	return nil
}

// start assembles and runs the node and pod controllers and the kubelet
// endpoint of one pool.
func (m *Manager) start(ctx context.Context, p fedinv.Pool) (_ *nodeProvider, err error) {
	addr, err := nodeAddr(m.cfg.Listen, len(m.nodes))
	if err != nil {
		return nil, err
	}
	l, port, err := listen(addr, m.cfg.Address, m.cfg.ClientCAs, m.cfg.AllowAnyClient)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = l.Close()
		}
	}()
	spec := m.nodeSpec(p, port)
	name := spec.Name
	np := newNodeProvider(m, spec, p)
	hub := m.cfg.Hub
	nc, err := vknode.NewNodeController(np, spec, hub.CoreV1().Nodes(),
		vknode.WithNodeEnableLeaseV1(hub.CoordinationV1().Leases(corev1.NamespaceNodeLease), m.cfg.LeaseDurationSeconds),
		vknode.WithNodeStatusUpdateInterval(time.Minute),
		vknode.WithNodeStatusUpdateErrorHandler(m.recreate(np)))
	if err != nil {
		return nil, fmt.Errorf("node controller %s: %w", name, err)
	}
	// The cluster's namespace only: the agent may read no other (the
	// hub places every member of the cluster there, hub/hubcluster).
	podInf := informers.NewSharedInformerFactoryWithOptions(hub, 0, informers.WithNamespace(v1alpha1.ClusterNamespace(m.cfg.Cluster)),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName=" + name }))
	// Never started: the pods skip downward-API resolution, so these listers
	// are never read, and the scoped credentials cannot watch Secrets anyway.
	unused := informers.NewSharedInformerFactoryWithOptions(hub, 0, informers.WithNamespace(v1alpha1.ClusterNamespace(m.cfg.Cluster)))
	pc, err := vknode.NewPodController(vknode.PodControllerConfig{
		PodClient: hub.CoreV1(), EventRecorder: quietRecorder{m.recorder},
		Provider:    &provider{node: name, s: m.cfg.Syncer},
		PodInformer: podInf.Core().V1().Pods(), SkipDownwardAPIResolution: true,
		SecretInformer: unused.Core().V1().Secrets(), ConfigMapInformer: unused.Core().V1().ConfigMaps(),
		ServiceInformer:                      unused.Core().V1().Services(),
		SyncPodsFromKubernetesRateLimiter:    queueRateLimiter(),
		DeletePodsFromKubernetesRateLimiter:  queueRateLimiter(),
		SyncPodStatusFromProviderRateLimiter: queueRateLimiter(),
	})
	if err != nil {
		return nil, fmt.Errorf("pod controller %s: %w", name, err)
	}
	mem := &members{node: name, lister: podInf.Core().V1().Pods().Lister()}
	np.heldFn = func() int { return mem.held(corev1.ResourceName(p.Resource)) }
	ep := &endpoint{node: name, members: mem, b: m.cfg.Syncer, started: time.Now(), auth: m.auth}
	log := klog.FromContext(ctx).WithValues("node", name)
	log.Info("Starting virtual node", "resource", p.Resource, "capacity", p.Capacity, "kubeletPort", port)
	m.wg.Add(3)
	go func() {
		defer m.wg.Done()
		if err := ep.serve(ctx, l); err != nil && ctx.Err() == nil {
			m.fail(fmt.Errorf("kubelet endpoint of %s: %w", name, err))
		}
	}()
	go func() {
		defer m.wg.Done()
		if err := nc.Run(ctx); err != nil && ctx.Err() == nil {
			m.fail(fmt.Errorf("virtual node %s: %w", name, err))
		}
	}()
	go func() {
		defer m.wg.Done()
		podInf.Start(ctx.Done())
		defer podInf.Shutdown()
		if err := pc.Run(ctx, m.cfg.Workers); err != nil && ctx.Err() == nil {
			m.fail(fmt.Errorf("pod controller %s: %w", name, err))
		}
	}()
	return np, nil
}

// recreate registers the node again when someone deleted it on the hub.
func (m *Manager) recreate(np *nodeProvider) vknode.ErrorHandler {
	return func(ctx context.Context, err error) error {
		if !apierrors.IsNotFound(err) {
			return err
		}
		np.mu.Lock()
		n := np.node.DeepCopy()
		np.mu.Unlock()
		n.ResourceVersion, n.UID = "", ""
		klog.FromContext(ctx).Info("Virtual node was deleted on the hub; registering it again", "node", n.Name)
		_, err = m.cfg.Hub.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		return err
	}
}

func (m *Manager) fail(err error) {
	select {
	case m.errs <- err:
	default:
	}
}

// Nodes returns the names of the virtual nodes started so far.
func (m *Manager) Nodes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for pool := range m.nodes {
		out = append(out, v1alpha1.VirtualNodeName(m.cfg.Cluster, pool))
	}
	return out
}
