// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// ShoalOptions locate the Shoal binaries that Up starts on top of the clusters.
type ShoalOptions struct {
	// HubBinary and AgentBinary are the shoal-hub and shoal-agent executables.
	HubBinary, AgentBinary string
	// GitServerBinary is shoal-gitserver; when set, Up starts it with a fleet
	// repository, starts the agents with GitOps on and points every workload
	// cluster at its overlay (clusters/<name>), then waits until all synced.
	GitServerBinary string
	// ReadyTimeout bounds the wait for the hub, the registrations and the
	// virtual nodes (default 3 minutes).
	ReadyTimeout time.Duration
	// HubArgs and AgentArgs are extra flags for shoal-hub and every
	// shoal-agent (tests: --tracing-endpoint).
	HubArgs, AgentArgs []string
	// HubEnv is added to shoal-hub's environment (KEY=VALUE; the load
	// harness's SCALE_HUB_ENV, e.g. GOMAXPROCS=4).
	HubEnv []string
	// NoREST starts the hub without --rest-listen, for a shoal-hub older
	// than the REST face (the upgrade test's previous release); HubState.REST
	// is then empty.
	NoREST bool
	// AgentStarters start the agents of the workload clusters they name
	// instead of a host shoal-agent (the other clusters get one). Those
	// clusters' API servers run the ServiceAccount admission plugin, so
	// the agent pod gets its ServiceAccount's token.
	AgentStarters map[string]AgentStarter
}

// HubState is what the state file records about the running shoal-hub.
type HubState struct {
	// Address is the gRPC address (host:port) the CLI and the agents dial.
	Address string `json:"address"`
	// HTTP is the base URL of /readyz and /metrics.
	HTTP string `json:"http"`
	// REST is the base URL of the REST face of the API and of the web
	// fleet view (REST + "/ui/"), served with the gRPC serving certificate.
	REST string `json:"rest,omitempty"`
	// Config is the shoal CLI config with the admin identity (SHOAL_CONFIG).
	Config string `json:"config"`
	// DataDir holds the hub CA and its embedded etcd.
	DataDir string `json:"dataDir"`
	// GitOps is the fleet's Git server, when Up started one.
	GitOps *GitOpsState `json:"gitops,omitempty"`
}

// Names of the Shoal processes in the state file.
const (
	HubProcess   = "shoal-hub"
	AgentProcess = "shoal-agent"
	// AgentNamespace holds each agent's credentials Secret in its own cluster.
	AgentNamespace = "shoal-system"
	// ShoalContext is the context shoal-hub writes into the fleet's CLI config.
	ShoalContext = "shoal-dev"
)

const shoalConfigFile = "shoal-config"

// ErrMissingShoalBinaries is returned (wrapped) when shoal-hub or shoal-agent is missing.
var ErrMissingShoalBinaries = errors.New("missing Shoal binaries")

func (o *ShoalOptions) check() error {
	if o == nil {
		return nil
	}
	var missing []string
	for _, b := range []string{o.HubBinary, o.AgentBinary} {
		if st, err := os.Stat(b); b == "" || err != nil || st.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w %q: run `make build` (or start the clusters only with --no-shoal)", ErrMissingShoalBinaries, missing)
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 3 * time.Minute
	}
	return nil
}

// startShoal starts shoal-hub on the hub cluster, registers one shoal-agent
// per workload cluster with its own join token, and waits until every cluster
// is Ready on the hub and has its virtual nodes in the hub cluster.
func (f *Fleet) startShoal(ctx context.Context) error {
	hub := f.Hub()
	if hub == nil {
		return errors.New("shoal-hub needs the hub cluster")
	}
	start := time.Now()
	if err := f.startHub(ctx, hub); err != nil {
		return err
	}
	if f.opts.Shoal.GitServerBinary != "" {
		if err := f.startGitServer(ctx, hub); err != nil {
			return err
		}
	}
	api, err := dialHubAPI(f.Shoal.Config)
	if err != nil {
		return err
	}
	defer api.close()
	for _, c := range f.Workloads() {
		if err := f.startAgent(ctx, api, c); err != nil {
			return err
		}
	}
	if err := f.waitRegistered(ctx, api); err != nil {
		return err
	}
	if f.Shoal.GitOps != nil {
		if err := f.setGitOpsSources(ctx, api); err != nil {
			return err
		}
	}
	f.progress("shoal: hub and %d agents up in %s; export SHOAL_CONFIG=%s", len(f.Workloads()),
		time.Since(start).Round(100*time.Millisecond), f.Shoal.Config)
	return nil
}

func (f *Fleet) startHub(ctx context.Context, hub *Cluster) error {
	o := f.opts.Shoal
	f.Shoal = &HubState{
		Address: fmt.Sprintf("127.0.0.1:%d", hub.Ports.Shoal),
		HTTP:    fmt.Sprintf("http://127.0.0.1:%d", hub.Ports.ShoalHTTP),
		REST:    fmt.Sprintf("https://127.0.0.1:%d", hub.Ports.ShoalREST),
		Config:  filepath.Join(f.Dir, shoalConfigFile),
		DataDir: filepath.Join(hub.Dir, "shoal-hub-data"),
	}
	args := []string{
		"--data-dir=" + f.Shoal.DataDir, "--listen=" + f.Shoal.Address,
		fmt.Sprintf("--http-listen=127.0.0.1:%d", hub.Ports.ShoalHTTP),
		"--kubeconfig=" + hub.Kubeconfig, "--admin-config=" + f.Shoal.Config, "--admin-context=" + ShoalContext,
	}
	if o.NoREST {
		f.Shoal.REST = ""
	} else {
		args = append(args, fmt.Sprintf("--rest-listen=127.0.0.1:%d", hub.Ports.ShoalREST))
	}
	p, err := f.addEnv(hub, HubProcess, o.HubBinary, append(args, o.HubArgs...), o.HubEnv)
	if err != nil {
		return err
	}
	if err := poll(ctx, o.ReadyTimeout, 100*time.Millisecond, p, func() bool {
		_, err := os.Stat(f.Shoal.Config)
		return err == nil && httpOK(ctx, nil, f.Shoal.HTTP+"/readyz")
	}); err != nil {
		return fmt.Errorf("shoal-hub: %w", err)
	}
	f.progress("shoal-hub ready at %s (pid %d)", f.Shoal.Address, p.Pid)
	f.stepTo("shoal-hub", 1, "shoal-hub ready")
	return nil
}

// agentTokenFile is the file in a cluster's directory that holds its
// agent's join token.
const agentTokenFile = "agent-join-token"

// startAgent creates the agent's namespace and a one-use join token, then
// starts shoal-agent against the workload cluster's admin kubeconfig (or
// hands the token to the cluster's AgentStarter).
func (f *Fleet) startAgent(ctx context.Context, api *hubAPI, c *Cluster) error {
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: AgentNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cluster %s: namespace %s: %w", c.Name, AgentNamespace, err)
	}
	token, caHash, err := api.joinToken(ctx, c.Name)
	if err != nil {
		return fmt.Errorf("join token for %s: %w", c.Name, err)
	}
	if start := f.agentStarter(c); start != nil {
		return f.startExternalAgent(ctx, c, start, token, caHash)
	}
	// The token goes in a file only this user reads, never on the command
	// line (the process table is world-readable).
	tokenFile := filepath.Join(c.Dir, agentTokenFile)
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		return fmt.Errorf("cluster %s: join token file: %w", c.Name, err)
	}
	args := []string{
		"--hub=" + f.Shoal.Address, "--token-file=" + tokenFile, "--ca-hash=" + caHash,
		"--cluster-name=" + c.Name, "--kubeconfig=" + c.Kubeconfig, "--namespace=" + AgentNamespace,
		// One kubelet endpoint per virtual node, each on a port of the
		// kernel's choice: consecutive ports from c.Ports.Shoal would take
		// the cluster's next ports (ShoalHTTP, Kwok).
		"--kubelet-listen=" + net.JoinHostPort(agentIP(c), "0"), "--kubelet-address=" + agentIP(c),
		// The hub API server's --kubelet-client-certificate is the admin
		// certificate, signed by the fleet CA.
		"--kubelet-client-ca=" + f.KubeletClientCAFile(),
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", c.Ports.ShoalHTTP),
		"--labels=profile=" + c.Profile + ",region=" + c.Region,
	}
	args = append(args, f.agentGitOpsArgs(c)...)
	args = append(args, f.opts.Shoal.AgentArgs...)
	p, err := f.add(c, AgentProcess, f.opts.Shoal.AgentBinary, args)
	if err != nil {
		return err
	}
	f.progress("cluster %s: shoal-agent started (pid %d) with a one-use join token", c.Name, p.Pid)
	f.stepTo("agent/"+c.Name, 1, "cluster "+c.Name+": shoal-agent started")
	return nil
}

// KubeletClientCAFile is the CA certificate that signed the client
// certificate the fleet's API servers present to kubelets (the admin
// certificate): what an agent's --kubelet-client-ca must name.
func (f *Fleet) KubeletClientCAFile() string { return filepath.Join(f.pki(), caCertFile) }

// agentIP is where the agent's kubelet endpoints listen: loopback, or with
// real nodes the cluster's first node address, because the hub API server
// does not proxy to loopback (`kubectl get --raw
// /api/v1/nodes/<vnode>/proxy/pods`, the stats summary).
func agentIP(c *Cluster) string {
	if ip := c.dnsIP(); ip != "" {
		return ip
	}
	return "127.0.0.1"
}

// waitRegistered polls the hub until every workload cluster is Ready and its
// virtual nodes exist in the hub cluster.
func (f *Fleet) waitRegistered(ctx context.Context, api *hubAPI) error {
	hcs, err := f.Hub().Clientset()
	if err != nil {
		return err
	}
	hubProc := f.process(f.Hub(), HubProcess)
	pending := map[string]bool{}
	for _, c := range f.Workloads() {
		pending[c.Name] = true
	}
	var exited error
	err = poll(ctx, f.opts.Shoal.ReadyTimeout, 250*time.Millisecond, hubProc, func() bool {
		for name := range pending {
			if p := f.process(f.Cluster(name), AgentProcess); p != nil && !p.Alive() {
				exited = fmt.Errorf("cluster %s: %w", name, p.errExited())
				return true
			}
		}
		states, err := api.clusterStates(ctx)
		if err != nil {
			return false
		}
		nodes, err := VirtualNodes(ctx, hcs)
		if err != nil {
			return false
		}
		for name := range pending {
			if states[name] == "Ready" && nodes[name] > 0 {
				delete(pending, name)
				f.progress("cluster %s: Ready on the hub, %d virtual node(s) in the hub cluster", name, nodes[name])
				f.stepTo("registered/"+name, 1, "cluster "+name+": Ready on the hub")
			}
		}
		return len(pending) == 0
	})
	if exited != nil {
		return exited
	}
	if err != nil {
		var tails []string
		for name := range pending {
			if p := f.process(f.Cluster(name), AgentProcess); p != nil {
				tails = append(tails, fmt.Sprintf("last lines of %s:\n%s", p.Log, p.LogTail(5)))
			}
		}
		return fmt.Errorf("waiting for clusters %v to register with the hub: %w\n%s", keys(pending), err, strings.Join(tails, "\n"))
	}
	return nil
}

// VirtualNodes counts the hub cluster's virtual nodes per workload cluster.
func VirtualNodes(ctx context.Context, hub kubernetes.Interface) (map[string]int, error) {
	list, err := hub.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.VirtualNodeSelector, ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for i := range list.Items {
		out[list.Items[i].Labels[v1alpha1.LabelCluster]]++
	}
	return out, nil
}

// process returns c's newest process called name, or nil.
func (f *Fleet) process(c *Cluster, name string) *Process {
	if c == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(c.Processes) - 1; i >= 0; i-- {
		if c.Processes[i].Name == name {
			return c.Processes[i]
		}
	}
	return nil
}

// add starts one process of cluster c (its log in c's directory) and records it.
func (f *Fleet) add(c *Cluster, name, bin string, args []string) (*Process, error) {
	return f.addEnv(c, name, bin, args, nil)
}

// addEnv is add with env added to the process's environment.
func (f *Fleet) addEnv(c *Cluster, name, bin string, args, env []string) (*Process, error) {
	p, err := startProcess(name, bin, args, env, filepath.Join(c.Dir, name+".log"), f.opts.DieWithParent)
	if p != nil {
		f.record(c, p)
	}
	return p, err
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
