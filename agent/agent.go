// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent/checkpoints"
	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/agent/deps"
	"github.com/shoal-dev/shoal/agent/fence"
	"github.com/shoal-dev/shoal/agent/gang"
	"github.com/shoal-dev/shoal/agent/hubclient"
	"github.com/shoal-dev/shoal/agent/hubkube"
	"github.com/shoal-dev/shoal/agent/inventory"
	"github.com/shoal-dev/shoal/agent/nodehealth"
	"github.com/shoal-dev/shoal/agent/podsync"
	"github.com/shoal-dev/shoal/agent/rendezvous"
	"github.com/shoal-dev/shoal/agent/serviceload"
	"github.com/shoal-dev/shoal/agent/vnode"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/internal/kubeclient"
)

// Agent is one shoal-agent.
type Agent struct {
	cfg Config
	// clientCAs verify the kubelet endpoints' clients (nil: any client).
	clientCAs *x509.CertPool
}

// New checks cfg and returns an Agent.
func New(cfg Config) (*Agent, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg}
	if cfg.KubeletClientCAFile != "" {
		var err error
		if a.clientCAs, err = vnode.LoadClientCAs(cfg.KubeletClientCAFile); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Run registers (or reuses stored credentials) and runs every part until
// ctx ends or one of them fails.
func (a *Agent) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("cluster", a.cfg.Cluster)
	ctx = klog.NewContext(ctx, log)
	local, err := a.localClient()
	if err != nil {
		return err
	}
	creds, err := a.credentials(ctx, local)
	if err != nil {
		return err
	}
	keeper := hubclient.NewKeeper(hubclient.SecretStore{Client: local, Namespace: a.cfg.Namespace}, creds)
	hubAPI, err := hubclient.Dial(a.cfg.HubAddress, creds, a.cfg.Version)
	if err != nil {
		return err
	}
	defer hubAPI.Close()
	h := &health{client: local, ok: true}
	workload, err := cluster.New(local)
	if err != nil {
		return fmt.Errorf("workload cluster cache: %w", err)
	}
	spot := nodehealth.Spot{Taints: a.cfg.SpotNodeTaints, Labels: a.cfg.SpotNodeLabels}
	watcher := inventory.NewWatcher(workload, a.cfg.Cluster, a.cfg.Topology,
		inventory.WithLabels(a.cfg.Labels), inventory.WithInterval(a.cfg.InventoryInterval),
		inventory.WithUnschedulable(func(n *corev1.Node) bool { _, ok := spot.Reclaimed(n); return ok }))
	toHub := watcher.Subscribe()
	reports := make(chan hubclient.Report, 1)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return workload.Run(ctx) })
	g.Go(func() error { return h.run(ctx, 5*time.Second) })
	if len(creds.HubKubeconfig) == 0 {
		log.Info("The hub issued no hub-cluster credentials (it runs without --kubeconfig): reporting inventory only, no virtual nodes")
	} else if err := a.runNodes(ctx, g, keeper, hubAPI, workload, watcher, h); err != nil {
		g.Go(func() error { return err }) // stops the parts already started
	}
	// The calls to the hub start after runNodes has hooked the fence to them.
	g.Go(func() error { return encodeReports(ctx, toHub, reports) })
	g.Go(func() error { return hubAPI.RunReports(ctx, reports) })
	g.Go(func() error { return hubAPI.RunRenewal(ctx, keeper) })
	g.Go(func() error {
		return hubAPI.RunHeartbeats(ctx, a.cfg.HeartbeatInterval, hubclient.HealthFunc(h.get))
	})
	if a.cfg.GitOps != nil {
		g.Go(func() error { return a.cfg.GitOps(ctx, hubAPI, local, a.cfg.Local) })
	}
	g.Go(func() error { return watcher.Run(ctx) })
	log.Info("Agent running", "hub", a.cfg.HubAddress)
	return g.Wait()
}

// localClient is Config.LocalClient, or a client of Config.Local sized for gangs.
func (a *Agent) localClient() (kubernetes.Interface, error) {
	if a.cfg.LocalClient != nil {
		return a.cfg.LocalClient, nil
	}
	local, err := kubernetes.NewForConfig(kubeclient.Sized(a.cfg.Local, clientQPS, clientBurst))
	if err != nil {
		return nil, fmt.Errorf("workload cluster client: %w", err)
	}
	return local, nil
}

// runNodes starts, in g, what serves the hub cluster: the token refresher
// (which asks the hub for new credentials over hubAPI when its token
// expired or is refused),
// the pod syncer with the gang gate, the copies of the members' ConfigMaps,
// Secrets and ServiceAccounts (agent/deps) and the fence (fed by every successful
// heartbeat sent while the hub cluster probe is answered), the node failure watcher, the rendezvous mirror, the
// reader of member 0's checkpoint lines (agent/checkpoints, reporting them over hubAPI), the reader
// of the inference replicas' load (agent/serviceload, reporting it over hubAPI), and the
// virtual nodes with their kubelet endpoints (once the gate has loaded its
// epochs and the hub cluster accepts the agent's credentials).
func (a *Agent) runNodes(ctx context.Context, g *errgroup.Group, keeper *hubclient.Keeper, hubAPI *hubclient.Client,
	workload *cluster.Cache, watcher *inventory.Watcher, h *health) error {
	hubKube, err := hubkube.New(keeper.Current().HubKubeconfig)
	if err != nil {
		return err
	}
	hubKube.OnRefresh = func(ctx context.Context, kc []byte) error {
		_, err := keeper.Update(ctx, func(c *hubclient.Credentials) { c.HubKubeconfig = kc })
		return err
	}
	hubKube.Reissue = func(ctx context.Context) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return hubAPI.IssueHubCredentials(ctx)
	}
	hubCfg := hubKube.Config()
	hubCfg.UserAgent = "shoal-agent/" + a.cfg.Version
	if a.cfg.HubClusterDial != nil {
		hubCfg.Dial = a.cfg.HubClusterDial
	}
	hub, err := kubernetes.NewForConfig(kubeclient.Sized(hubCfg, clientQPS, clientBurst))
	if err != nil {
		return fmt.Errorf("hub cluster client: %w", err)
	}
	gateOpts := []gang.Option{gang.WithRecord(a.cfg.Namespace), gang.WithTopology(watcher.TopologyKeys)}
	if a.cfg.Local != nil { // ComputeDomains are custom resources: a dynamic client of the workload cluster
		dcfg := rest.CopyConfig(a.cfg.Local)
		if dcfg.QPS == 0 && dcfg.RateLimiter == nil {
			dcfg.QPS, dcfg.Burst = clientQPS, clientBurst // every member of a gang slice reads its domain while preparing
		}
		domains, err := dynamic.NewForConfig(dcfg)
		if err != nil {
			return fmt.Errorf("workload cluster dynamic client: %w", err)
		}
		gateOpts = append(gateOpts, gang.WithComputeDomains(domains, 0))
	}
	gate := gang.New(workload, gateOpts...)
	syncer := podsync.New(workload, a.cfg.Local, gate, nil)
	self, err := podsync.SelfSubject(ctx, workload.Client())
	if err != nil {
		return err
	}
	syncer.SetMemberSubject(self) // its member rights, in each queue namespace it creates
	copies := deps.New(hub, v1alpha1.ClusterNamespace(a.cfg.Cluster), workload)
	syncer.SetDependencies(copies)
	gate.SetStopper(syncer)
	gate.SetCreator(syncer) // prepared members are created at their commit
	fenced := fence.New(a.cfg.FenceTimeout, syncer, nil)
	// The hub's fence timeout as last told (kept with the credentials, so
	// that an agent restarted inside a cut fences by it too), then from
	// every heartbeat reply.
	stored := keeper.Current().HubFenceTimeout // heartbeats run one at a time: no lock
	fenced.Limit(ctx, stored)
	hubAPI.OnHubFenceTimeout(func(d time.Duration) {
		if fenced.Limit(ctx, d) || d != stored {
			// Through the keeper, the one writer of the credentials Secret.
			if _, err := keeper.Update(ctx, func(c *hubclient.Credentials) { c.HubFenceTimeout = d }); err != nil {
				klog.FromContext(ctx).Error(err, "Recording the hub's fence timeout")
				return
			}
			stored = d
		}
	})
	syncer.SetCreateCheck(fenced.Allowed)
	// A heartbeat counts for the fence only while the hub cluster answers
	// too: cut from it alone, the agent does not see its members' deletion.
	probe := hubkube.NewProbe(hub.Discovery().RESTClient(), nil)
	hubAPI.OnHubCluster(probe.Reachable)
	probe.OnChange(hubAPI.Beat)
	hubAPI.OnContact(fenced.Contact)
	failures := nodehealth.New(workload, syncer, nodehealth.Config{Grace: a.cfg.NodeFailureGrace,
		Taints: a.cfg.GPUFailureTaints, Conditions: a.cfg.GPUFailureConditions,
		Spot: nodehealth.Spot{Taints: a.cfg.SpotNodeTaints, Labels: a.cfg.SpotNodeLabels}})
	nodes := vnode.New(vnode.Config{Cluster: a.cfg.Cluster, Hub: hub, Syncer: syncer, Labels: a.cfg.Labels,
		Address: a.cfg.KubeletAddress, Listen: a.cfg.KubeletListen, LeaseDurationSeconds: a.cfg.LeaseDurationSeconds,
		ClientCAs: a.clientCAs, AllowAnyClient: a.cfg.KubeletInsecureAllowAnyClient,
		Version: a.cfg.Version, Health: h.get})
	syncer.SetRecorder(nodes.Recorder())
	copies.SetRecorder(nodes.Recorder())
	mirror := rendezvous.New(hub, v1alpha1.ClusterNamespace(a.cfg.Cluster), workload)
	checkpointLines := checkpoints.New(workload, hubAPI)
	serviceLoad := serviceload.New(workload, hubAPI)
	toNodes := watcher.Subscribe()
	g.Go(func() error { return hubKube.Run(ctx) })
	g.Go(func() error { return mirror.Run(ctx) })
	g.Go(func() error { return checkpointLines.Run(ctx) })
	g.Go(func() error { return serviceLoad.Run(ctx) })
	g.Go(func() error { return syncer.Run(ctx) })
	g.Go(func() error { return copies.Run(ctx) })
	g.Go(func() error { return fenced.Run(ctx) })
	g.Go(func() error { return probe.Run(ctx) })
	g.Go(func() error { return gate.Run(ctx) })
	g.Go(func() error { return failures.Run(ctx) })
	g.Go(func() error {
		select { // no member is accepted before the epochs of earlier runs are back
		case <-ctx.Done():
			return nil
		case <-gate.Loaded():
		}
		hubKube.WaitAccepted(ctx, hub)
		return nodes.Run(ctx, toNodes)
	})
	klog.FromContext(ctx).Info("Serving virtual nodes", "kubeletListen", a.cfg.KubeletListen)
	return nil
}

// encodeReports turns each changed inventory into a report for the hub.
func encodeReports(ctx context.Context, in <-chan fedinv.Cluster, out chan hubclient.Report) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case c := <-in:
			b, err := json.Marshal(c)
			if err != nil {
				return fmt.Errorf("encode inventory: %w", err)
			}
			select { // the sender wants only the latest
			case <-out:
			default:
			}
			out <- hubclient.Report{Generation: c.Generation, JSON: b}
		}
	}
}

// Client sizing for gangs (kubeclient.Sized): every member of a gang is
// created, prepared, committed and reported through the agent's two
// clients within a second or two.
const (
	clientQPS   = 200
	clientBurst = 400
)
