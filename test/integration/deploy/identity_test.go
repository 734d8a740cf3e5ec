// SPDX-License-Identifier: Apache-2.0

package deploy_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/charts"
	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/builders/testjob"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// installed is one chart installed into one cluster and its process.
type installed struct {
	cluster *devfleet.Cluster
	admin   *rest.Config // the test's, to install and check; never the process's
	objs    []charts.Object
	proc    *proc
}

// TestChartIdentities installs both charts, runs shoal-hub and one
// shoal-agent per workload cluster as the charts' ServiceAccounts, and
// runs the main job end to end: registration, a gang across the two
// clusters to Running and Succeeded, and a GitOps sync. Then it removes one
// named rule at a time from the charts' RBAC and shows the failure.
func TestChartIdentities(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a fleet and the Shoal binaries")
	}
	hub, api := startChartHub(t)
	var agents []*installed
	for _, c := range env.Workloads() {
		agents = append(agents, startChartAgent(t, api, hub, c))
	}
	procs := []*proc{hub.proc}
	for _, a := range agents {
		procs = append(procs, a.proc)
	}
	hubCS := kubernetes.NewForConfigOrDie(hub.admin)

	eventually(t, 2*time.Minute, "both clusters Ready on the hub with their virtual nodes", procs, func(ctx context.Context) (bool, error) {
		cl, err := api.clusterList(ctx)
		if err != nil {
			return false, err
		}
		nodes, err := devfleet.VirtualNodes(ctx, hubCS)
		if err != nil {
			return false, err
		}
		for _, a := range agents {
			c := cl[a.cluster.Name]
			if c == nil || c.Status.State != v1alpha1.ClusterReady || nodes[a.cluster.Name] == 0 {
				return false, fmt.Errorf("cluster %s: %+v, %d virtual nodes", a.cluster.Name, c, nodes[a.cluster.Name])
			}
		}
		return true, nil
	})

	// The agents' hub-cluster credentials name the address the chart's
	// hubClusterServer gives, not the hub's own (--hub-cluster-server).
	for _, a := range agents {
		sec, err := kubernetes.NewForConfigOrDie(a.admin).CoreV1().Secrets("shoal-system").Get(t.Context(), "shoal-agent-credentials", metav1.GetOptions{})
		mustf(t, err, "cluster %s: the agent's credentials", a.cluster.Name)
		var all string
		for _, v := range sec.Data {
			all += string(v)
		}
		if !strings.Contains(all, "server: "+hub.admin.Host) || strings.Contains(all, "localhost") {
			t.Errorf("cluster %s: the agent's hub-cluster kubeconfig does not name %s alone", a.cluster.Name, hub.admin.Host)
		}
	}
	t.Run("a gang across two clusters", func(t *testing.T) { gangAcrossClusters(t, api, agents, procs) })
	git := startGitServer(t)
	procs = append(procs, git)
	t.Run("a GitOps sync", func(t *testing.T) { gitopsSync(t, api, agents, procs) })

	// With every rule of the charts, nothing was refused on the way.
	for _, p := range procs {
		for _, l := range strings.Split(p.output(), "\n") {
			if strings.Contains(strings.ToLower(l), "forbidden") {
				t.Errorf("%s was refused with the charts' rights: %s", p.Name, l)
			}
		}
	}

	// Each rule removed from the chart's RBAC, one at a time, and what fails.
	t.Run("without podtemplates in Role shoal-hub-dry-run", func(t *testing.T) {
		install(t.Context(), t, hub.admin, withoutRule(t, hub.objs, "Role", "shoal-hub-dry-run", "podtemplates"))
		t.Cleanup(func() { install(context.Background(), t, hub.admin, hub.objs) })
		job := testjob.New("no-dry-run").Queue("deploy").Obj()
		var got error
		eventually(t, 30*time.Second, "a submit refused", procs, func(ctx context.Context) (bool, error) {
			_, got = api.jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: object(t, job), DryRun: true})
			return got != nil, nil
		})
		if !strings.Contains(hub.proc.output(), `podtemplates is forbidden: User \"system:serviceaccount:shoal-system:shoal-hub\" cannot create resource \"podtemplates\"`) {
			t.Errorf("the hub's log names no forbidden podtemplates create (submit said %v)", got)
		}
		t.Logf("submit without the rule: %v", got)
		install(t.Context(), t, hub.admin, hub.objs)
		eventually(t, 30*time.Second, "the submit accepted again with the rule back", procs, func(ctx context.Context) (bool, error) {
			_, err := api.jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: object(t, job), DryRun: true})
			return err == nil, err
		})
	})
	t.Run("without pods in ClusterRole shoal-agent-member", func(t *testing.T) {
		for _, a := range agents {
			install(t.Context(), t, a.admin, withoutRule(t, a.objs, "ClusterRole", "shoal-agent-member", "pods"))
		}
		t.Cleanup(func() {
			for _, a := range agents {
				install(context.Background(), t, a.admin, a.objs)
			}
		})
		job := testjob.New("no-pods").Queue("deploy").GPUs(8).Obj()
		_, err := api.jobs.Submit(t.Context(), &shoalv1.SubmitJobRequest{Job: object(t, job)})
		mustf(t, err, "submit")
		// klog quotes the error: compare without its backslashes.
		forbidden := `is forbidden: User "system:serviceaccount:shoal-system:shoal-agent" cannot create resource "pods" in API group "" in the namespace "` +
			v1alpha1.LocalMemberNamespace("deploy") + `"`
		var line string
		// The agent reports the member failed (ProviderFailed); the hub
		// aborts the gang's dispatch with that message and requeues it.
		eventually(t, time.Minute, "the member's local pod refused", procs, func(context.Context) (bool, error) {
			for _, p := range procs {
				for _, l := range strings.Split(p.output(), "\n") {
					if strings.Contains(l, `job="no-pods"`) && strings.Contains(strings.ReplaceAll(l, `\`, ""), forbidden) {
						line = l
						return true, nil
					}
				}
			}
			return false, nil
		})
		t.Logf("without the rule: %s", line)
		if j, err := api.job(t.Context(), "no-pods"); err != nil || j.Status.Phase == v1alpha1.JobRunning {
			t.Fatalf("the job runs without its local pod: %+v %v", j, err)
		}
		for _, a := range agents {
			install(t.Context(), t, a.admin, a.objs)
		}
		eventually(t, 2*time.Minute, "the job Running with the rule back", procs, func(ctx context.Context) (bool, error) {
			j, err := api.job(ctx, "no-pods")
			if err != nil {
				return false, err
			}
			return j.Status.Phase == v1alpha1.JobRunning, fmt.Errorf("phase %s", j.Status.Phase)
		})
	})
	t.Run("without priorityclasses in ClusterRole shoal-agent-gitops", func(t *testing.T) {
		a := agents[0]
		install(t.Context(), t, a.admin, withoutRule(t, a.objs, "ClusterRole", "shoal-agent-gitops", "priorityclasses"))
		t.Cleanup(func() { install(context.Background(), t, a.admin, a.objs) })
		// A new path: the sync applies a PriorityClass it may no longer write.
		setSource(t, api, a.cluster.Name, "clusters/urgent")
		var msg string
		eventually(t, time.Minute, "the GitOps sync fails on the PriorityClass", procs, func(ctx context.Context) (bool, error) {
			st, err := api.gitopsStatus(ctx)
			if err != nil {
				return false, err
			}
			s := st[a.cluster.Name]
			if s == nil {
				return false, nil
			}
			ready := meta.FindStatusCondition(s.Conditions, v1alpha1.GitOpsConditionReady)
			if ready == nil || ready.Status != metav1.ConditionFalse {
				return false, fmt.Errorf("status %+v", s)
			}
			msg = ready.Reason + ": " + ready.Message
			return strings.Contains(ready.Message, "forbidden"), fmt.Errorf("Ready condition %s", msg)
		})
		if !strings.Contains(msg, "priorityclasses") {
			t.Errorf("the Ready condition does not name priorityclasses: %s", msg)
		}
		t.Logf("GitOps without the rule: Ready=False %s", msg)
		install(t.Context(), t, a.admin, a.objs)
		waitSynced(t, api, []*installed{a}, procs, "the sync through with the rule back")
	})
}

// startChartHub renders the hub chart, installs it into the hub cluster and
// starts shoal-hub as its ServiceAccount; it returns the admin API.
func startChartHub(t *testing.T) (*installed, *hubAPI) {
	ctx := t.Context()
	hc := env.Hub()
	admin, err := hc.RESTConfig()
	mustf(t, err, "hub cluster")
	grpcPort, httpPort, healthPort, restPort := freePort(t), freePort(t), freePort(t), freePort(t)
	objs := render(t, "shoal-hub", map[string]any{
		"createNamespace":  true,
		"advertiseAddress": fmt.Sprintf("127.0.0.1:%d", grpcPort),
		"hubClusterServer": admin.Host,
		"ports":            map[string]any{"grpc": grpcPort, "http": httpPort, "health": healthPort, "rest": restPort},
	})
	install(ctx, t, admin, objs)
	cs := kubernetes.NewForConfigOrDie(admin)
	// The hub reaches its API server by another name than the agents (in a
	// pod: kubernetes.default.svc), here localhost: the agents' kubeconfigs
	// must name hubClusterServer.
	p := planProcess(t, workload(t, objs), podContext{objs: objs, dir: t.TempDir(), server: strings.Replace(admin.Host, "127.0.0.1", "localhost", 1),
		caPEM: caPEM(t, admin), token: mintToken(ctx, t, cs, "shoal-system", "shoal-hub"), podIP: "127.0.0.1"})
	if p.ServiceAccount != "shoal-hub" {
		t.Fatalf("the hub runs as ServiceAccount %q", p.ServiceAccount)
	}
	noAdmin(t, p, env.Dir)
	t.Logf("shoal-hub %s", strings.Join(p.Args, " "))
	hub := &installed{cluster: hc, admin: admin, objs: objs, proc: start(t, "shoal-hub", bin("shoal-hub"), p.Args, p.Env)}
	adminConfig, _ := flagValue(p.Args, "admin-config")
	adminContext, _ := flagValue(p.Args, "admin-context")
	eventually(t, time.Minute, "shoal-hub ready", []*proc{hub.proc}, func(ctx context.Context) (bool, error) {
		if _, err := os.Stat(adminConfig); err != nil {
			return false, err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("/readyz: %s", resp.Status)
	})
	// What docs/install.md says: kubectl exec shoal-hub-0 -- /shoal-hub
	// admin-config --admin-config=/var/lib/shoal/shoal-config.
	cmd := exec.Command(bin("shoal-hub"), "admin-config", "--admin-config="+adminConfig)
	cmd.Env = []string{}
	out, err := cmd.Output()
	mustf(t, err, "shoal-hub admin-config")
	cliConfig := filepath.Join(t.TempDir(), "shoal-config")
	writeFiles(t, filepath.Dir(cliConfig), map[string][]byte{filepath.Base(cliConfig): out}, 0o600)
	return hub, dialHub(t, cliConfig, adminContext)
}

// startChartAgent creates a join token, renders the agent chart for cluster
// c with it, installs it into c and starts shoal-agent as its ServiceAccount.
func startChartAgent(t *testing.T, api *hubAPI, hub *installed, c *devfleet.Cluster) *installed {
	ctx := t.Context()
	admin, err := c.RESTConfig()
	mustf(t, err, "cluster %s", c.Name)
	jt, err := api.clusters.CreateJoinToken(ctx, &shoalv1.CreateJoinTokenRequest{TtlSeconds: 600, Usages: 1, Description: "deploy test " + c.Name})
	mustf(t, err, "join token for %s", c.Name)
	kubeletCA, err := os.ReadFile(env.KubeletClientCAFile())
	mustf(t, err, "kubelet client CA")
	hubAddr, _ := flagValue(hub.proc.cmd.Args, "advertise-address")
	objs := render(t, "shoal-agent", map[string]any{
		"createNamespace": true,
		"hub":             map[string]any{"address": hubAddr},
		"cluster":         map[string]any{"name": c.Name, "labels": map[string]any{"profile": c.Profile, "region": c.Region}},
		"join":            map[string]any{"token": jt.Token, "caHash": jt.CaHash},
		"kubelet":         map[string]any{"clientCA": string(kubeletCA), "port": freePort(t), "servicePorts": 1},
		"ports":           map[string]any{"metrics": freePort(t), "health": freePort(t)},
		"gitops":          map[string]any{"enabled": true, "reportInterval": "2s", "namespaces": []any{fleetNamespace}},
	})
	install(ctx, t, admin, objs)
	cs := kubernetes.NewForConfigOrDie(admin)
	p := planProcess(t, workload(t, objs), podContext{objs: objs, dir: t.TempDir(), server: admin.Host,
		caPEM: caPEM(t, admin), token: mintToken(ctx, t, cs, "shoal-system", "shoal-agent"), podIP: "127.0.0.1"})
	if p.ServiceAccount != "shoal-agent" {
		t.Fatalf("the agent runs as ServiceAccount %q", p.ServiceAccount)
	}
	if _, ok := flagValue(p.Args, "kubeconfig"); ok {
		t.Fatal("the agent chart passes --kubeconfig: the agent is meant to use its in-cluster config")
	}
	// The in-cluster config (server, CA, the pod's token file) as a
	// kubeconfig: rest.InClusterConfig reads fixed paths under /var/run.
	args := append(p.Args, "--kubeconfig="+p.KubeconfigForToken)
	noAdmin(t, &process{ServiceAccount: p.ServiceAccount, Args: args, Env: p.Env}, env.Dir)
	t.Logf("shoal-agent %s", strings.Join(args, " "))
	return &installed{cluster: c, admin: admin, objs: objs, proc: start(t, "shoal-agent-"+c.Name, bin("shoal-agent"), args, p.Env)}
}

// gangAcrossClusters runs a gang of 3 x 8 GPUs, which two 16-GPU clusters
// hold only together, to Running and then Succeeded.
func gangAcrossClusters(t *testing.T, api *hubAPI, agents []*installed, procs []*proc) {
	ctx := t.Context()
	_, err := api.queues.Create(ctx, &shoalv1.CreateQueueRequest{Queue: object(t, testqueue.New("deploy").Obj())})
	mustf(t, err, "create queue")
	job := testjob.New("gang").Queue("deploy").Members(3).GPUs(8).MaxClusters(2).Obj()
	_, err = api.jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: object(t, job)})
	mustf(t, err, "submit")
	eventually(t, 2*time.Minute, "the gang Running", procs, func(ctx context.Context) (bool, error) {
		j, err := api.job(ctx, "gang")
		if err != nil {
			return false, err
		}
		return j.Status.Phase == v1alpha1.JobRunning, fmt.Errorf("phase %s, conditions %+v", j.Status.Phase, j.Status.Conditions)
	})
	// The first dispatch went through: no member was refused while the
	// agents' new RoleBindings in the queue namespace took effect.
	for _, l := range strings.Split(procs[0].output(), "\n") {
		if strings.Contains(l, "Aborting a gang's dispatch") && strings.Contains(l, `job="gang"`) {
			t.Errorf("the gang's dispatch was aborted: %s", l)
		}
	}
	spread := map[string]int{}
	for _, a := range agents {
		cs := kubernetes.NewForConfigOrDie(a.admin)
		l, err := cs.CoreV1().Pods(v1alpha1.LocalMemberNamespace("deploy")).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=gang"})
		mustf(t, err, "cluster %s: local pods", a.cluster.Name)
		for i := range l.Items {
			p := &l.Items[i]
			if p.Status.Phase != corev1.PodRunning {
				t.Fatalf("cluster %s: local pod %s is %s", a.cluster.Name, p.Name, p.Status.Phase)
			}
			spread[a.cluster.Name]++
		}
	}
	if len(spread) != 2 || spread[agents[0].cluster.Name]+spread[agents[1].cluster.Name] != 3 {
		t.Fatalf("local member pods by cluster %v: want 3 over both clusters", spread)
	}
	t.Logf("members by cluster: %v", spread)
	// KWOK runs no process: the test ends every member's with exit 0.
	for _, a := range agents {
		cs := kubernetes.NewForConfigOrDie(a.admin)
		l, err := cs.CoreV1().Pods(v1alpha1.LocalMemberNamespace("deploy")).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=gang"})
		mustf(t, err, "cluster %s: local pods", a.cluster.Name)
		for i := range l.Items {
			p := &l.Items[i]
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.Now()}}}}
			_, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			mustf(t, err, "cluster %s: pod %s Succeeded", a.cluster.Name, p.Name)
		}
	}
	eventually(t, time.Minute, "the gang Succeeded", procs, func(ctx context.Context) (bool, error) {
		j, err := api.job(ctx, "gang")
		if err != nil {
			return false, err
		}
		return j.Status.Phase == v1alpha1.JobSucceeded, fmt.Errorf("phase %s", j.Status.Phase)
	})
}

// The fleet repository: base/ holds a namespace, a ResourceQuota in it and
// a PriorityClass (the kinds the agent chart's default gitops.rules
// cover); clusters/urgent adds a second PriorityClass.
const (
	fleetNamespace = "team-ml"
	fleetRepo      = "fleet.git"
)

var fleetFiles = map[string]string{
	"base/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [namespace.yaml, quota.yaml, priorityclass.yaml]\n",
	"base/namespace.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + fleetNamespace + "\n",
	"base/quota.yaml": "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: gpu-quota\n  namespace: " + fleetNamespace +
		"\nspec:\n  hard:\n    requests.nvidia.com/gpu: \"64\"\n",
	"base/priorityclass.yaml":            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: fleet-batch\nvalue: 1000\n",
	"clusters/urgent/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../../base, urgent.yaml]\n",
	"clusters/urgent/urgent.yaml":        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: fleet-urgent\nvalue: 2000\n",
}

var gitRepoURL string

// startGitServer serves the fleet repository (shoal-gitserver) until the test ends.
func startGitServer(t *testing.T) *proc {
	dir := t.TempDir()
	fixture := filepath.Join(dir, "fixture")
	for p, content := range fleetFiles {
		writeFiles(t, filepath.Join(fixture, filepath.Dir(p)), map[string][]byte{filepath.Base(p): []byte(content)}, 0o644)
	}
	addrFile := filepath.Join(dir, "url")
	git := start(t, "shoal-gitserver", bin("shoal-gitserver"), []string{"--root=" + filepath.Join(dir, "repos"),
		"--init=" + fleetRepo + "=" + fixture, "--branch=main", "--addr-file=" + addrFile},
		// The dev Git server (not a Shoal identity) runs git to create the repository.
		[]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir})
	eventually(t, 30*time.Second, "the Git server up", []*proc{git}, func(context.Context) (bool, error) {
		b, err := os.ReadFile(addrFile)
		gitRepoURL = strings.TrimSpace(string(b)) + "/" + fleetRepo
		return err == nil && strings.HasPrefix(string(b), "http://"), err
	})
	return git
}

// gitopsSync points both clusters at base/ of the fleet repository and
// waits until each applied it, healthy; the objects are in the workload
// clusters.
func gitopsSync(t *testing.T, api *hubAPI, agents []*installed, procs []*proc) {
	for _, a := range agents {
		setSource(t, api, a.cluster.Name, "base")
	}
	waitSynced(t, api, agents, procs, "both clusters synced from Git")
	for _, a := range agents {
		cs := kubernetes.NewForConfigOrDie(a.admin)
		_, err := cs.CoreV1().ResourceQuotas(fleetNamespace).Get(t.Context(), "gpu-quota", metav1.GetOptions{})
		mustf(t, err, "cluster %s: the ResourceQuota from Git", a.cluster.Name)
		_, err = cs.SchedulingV1().PriorityClasses().Get(t.Context(), "fleet-batch", metav1.GetOptions{})
		mustf(t, err, "cluster %s: the PriorityClass from Git", a.cluster.Name)
	}
}

func setSource(t *testing.T, api *hubAPI, cluster, path string) {
	t.Helper()
	src := v1alpha1.GitOpsSource{URL: gitRepoURL, Ref: v1alpha1.GitOpsRef{Branch: "main"}, Path: path,
		Interval: &metav1.Duration{Duration: 5 * time.Second}, Prune: true}
	_, err := api.gitops.SetSource(t.Context(), &shoalv1.SetGitOpsSourceRequest{Cluster: cluster, SourceJson: object(t, src).Json})
	mustf(t, err, "cluster %s: set GitOps source %s", cluster, path)
}

func waitSynced(t *testing.T, api *hubAPI, agents []*installed, procs []*proc, what string) {
	t.Helper()
	eventually(t, 90*time.Second, what, procs, func(ctx context.Context) (bool, error) {
		st, err := api.gitopsStatus(ctx)
		if err != nil {
			return false, err
		}
		for _, a := range agents {
			s := st[a.cluster.Name]
			if s == nil || s.AppliedCommit == "" || s.Health != v1alpha1.GitOpsHealthHealthy || !s.Ready() {
				return false, fmt.Errorf("cluster %s: %+v", a.cluster.Name, s)
			}
		}
		return true, nil
	})
}

// caPEM is the CA bundle of the API server cfg reaches.
func caPEM(t *testing.T, cfg *rest.Config) []byte {
	t.Helper()
	if len(cfg.CAData) > 0 {
		return cfg.CAData
	}
	b, err := os.ReadFile(cfg.CAFile)
	mustf(t, err, "API server CA")
	return b
}
