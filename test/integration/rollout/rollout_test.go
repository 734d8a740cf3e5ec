// SPDX-License-Identifier: Apache-2.0

package rollout_test

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoal-dev/shoal/agent/gitops"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fr "github.com/shoal-dev/shoal/federation/rollout"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/store"
)

const (
	agentNS     = "shoal-agent"
	credsSecret = "fleet-git"
)

// agent runs a Syncer in one workload cluster and exchanges with the hub
// like the real agent: it reports its status and syncs the source the hub
// answers with.
type agent struct {
	name   string
	k8s    client.Client
	syncer *gitops.Syncer

	mu        sync.Mutex
	attempted map[string]bool // every commit the cluster ever attempted
}

func startAgent(ctx context.Context, t *testing.T, name string, cfg *rest.Config, reg *registry.Registry) *agent {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNS}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: agentNS, Name: credsSecret},
			Data: map[string][]byte{"username": []byte(gitUser), "password": []byte(gitPassword)}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	a := &agent{name: name, k8s: c, attempted: map[string]bool{}}
	changed := make(chan struct{}, 1)
	a.syncer, err = gitops.New(cfg, gitops.Options{Namespace: agentNS, WorkDir: t.TempDir(), InsecureCredentialsOverHTTP: true,
		PollInterval: 200 * time.Millisecond, OnStatus: func(st v1alpha1.GitOpsStatus) {
			a.mu.Lock()
			a.attempted[st.AttemptedCommit] = true
			a.mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = a.syncer.Run(ctx) }()
	go func() { defer wg.Done(); a.exchange(ctx, t, reg, changed) }()
	t.Cleanup(wg.Wait)
	return a
}

// exchange is agent.GitOps's loop with the hub call made in process.
func (a *agent) exchange(ctx context.Context, t *testing.T, reg *registry.Registry, changed <-chan struct{}) {
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		src, err := reg.ReportGitOpsStatus(ctx, a.name, a.syncer.Status())
		if err != nil && ctx.Err() == nil {
			t.Errorf("report %s: %v", a.name, err)
		}
		if err == nil && src != nil {
			if cur, ok := a.syncer.Source(); !ok || !reflect.DeepEqual(cur, *src) {
				if err := a.syncer.SetSource(*src); err != nil {
					t.Errorf("%s: hub sent an invalid source: %v", a.name, err)
				}
				a.syncer.Trigger()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

func (a *agent) everAttempted(commit string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.attempted[commit]
}

// quota is the GPU quota the cluster runs (from base/quota.yaml).
func (a *agent) quota(t *testing.T) string {
	t.Helper()
	var q corev1.ResourceQuota
	if err := a.k8s.Get(context.Background(), client.ObjectKey{Namespace: "fleet-" + a.name, Name: "gpu-quota"}, &q); err != nil {
		t.Fatalf("%s: %v", a.name, err)
	}
	v := q.Spec.Hard["requests.nvidia.com/gpu"]
	return v.String()
}

// hub is the hub's GitOps side on the test store, under its own prefix.
type hub struct {
	st   *store.Store
	clk  *clocktesting.FakeClock
	reg  *registry.Registry
	ctrl *rollout.Controller
	cls  *store.Collection[*v1alpha1.Cluster]
}

func newHub(ctx context.Context, t *testing.T) *hub {
	t.Helper()
	s, err := store.Open(ctx, store.Config{Endpoints: []string{hubStore.ClientURL()}, Prefix: "/" + strings.ReplaceAll(t.Name(), "/", "-") + "/"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	clk := clocktesting.NewFakeClock(time.Now())
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(s, ca, registry.Config{Clock: clk})
	return &hub{st: s, clk: clk, reg: reg, ctrl: rollout.NewController(s, reg, rollout.Config{Clock: clk}),
		cls: store.NewCollection(s, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]())}
}

// register writes a Ready cluster record, as the registry does for an agent
// that registered and heartbeats.
func (h *hub) register(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	cl := &v1alpha1.Cluster{Spec: v1alpha1.ClusterSpec{UID: "uid-" + name}, Status: v1alpha1.ClusterStatus{State: v1alpha1.ClusterReady}}
	cl.Name = name
	if _, err := h.cls.Create(ctx, name, cl); err != nil {
		t.Fatal(err)
	}
}

func (h *hub) gitops(t *testing.T, name string) *v1alpha1.GitOpsStatus {
	t.Helper()
	cl, _, err := h.cls.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if cl.Status.GitOps == nil {
		return &v1alpha1.GitOpsStatus{}
	}
	return cl.Status.GitOps
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// rawCodec reads records as stored.
type rawCodec struct{}

func (rawCodec) Marshal(b []byte) ([]byte, error)   { return b, nil }
func (rawCodec) Unmarshal(b []byte) ([]byte, error) { return b, nil }

// noCredentialsOnHub fails if any cluster or rollout record holds the Git password.
func (h *hub) noCredentialsOnHub(ctx context.Context, t *testing.T) {
	t.Helper()
	n := 0
	for _, kind := range []string{registry.KindClusters, rollout.KindRollouts} {
		res, err := store.NewCollection[[]byte](h.st, kind, rawCodec{}).List(ctx, store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range res.Items {
			n++
			if bytes.Contains(it.Object, []byte(gitPassword)) || bytes.Contains(it.Object, []byte(gitUser)) {
				t.Fatalf("hub record %s/%s holds Git credentials: %s", kind, it.Name, it.Object)
			}
		}
	}
	if n < 3 {
		t.Fatalf("checked only %d hub records", n)
	}
}

// TestRolloutBrokenBaseHaltsAtCanary: eu1 and us1 run the fleet repository's
// good commit. A commit that breaks the shared base is rolled out in waves
// 1,100%: the hub pins it on the canary eu1 only, eu1 rejects it (nothing
// applied), the rollout halts and pins eu1 back; us1 never attempts the bad
// commit. A fixed commit then passes both waves after the soak. The hub
// stores no credentials throughout.
func TestRolloutBrokenBaseHaltsAtCanary(t *testing.T) {
	if skipAll != "" {
		t.Skip(skipAll)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	url, good := newFleetRepo(t)
	h := newHub(ctx, t)
	agents := map[string]*agent{}
	for _, name := range []string{"eu1", "us1"} {
		h.register(ctx, t, name)
		src := v1alpha1.GitOpsSource{URL: url, Ref: v1alpha1.GitOpsRef{Branch: "main", Commit: good}, Path: "clusters/" + name,
			SecretRef: credsSecret, Prune: true, Interval: &metav1.Duration{Duration: time.Minute}, HealthTimeout: &metav1.Duration{Duration: 30 * time.Second}}
		if _, _, err := h.reg.SetGitOpsSource(ctx, name, &src); err != nil {
			t.Fatal(err)
		}
		agents[name] = startAgent(ctx, t, name, clusters[name], h.reg)
	}
	for name := range agents {
		waitFor(t, name+" to apply the good commit", time.Minute, func() bool {
			g := h.gitops(t, name)
			return g.AppliedCommit == good && g.Health == v1alpha1.GitOpsHealthHealthy
		})
		if q := agents[name].quota(t); q != "64" {
			t.Fatalf("%s quota %s, want 64", name, q)
		}
	}

	bad := push(t, url, map[string]string{"base/quota.yaml": quotaYAML("sixty-four")})
	r, err := h.ctrl.Create(ctx, rollout.CreateRequest{Name: "bad", Revision: bad, Waves: "1,100%", Soak: time.Minute, WaveTimeout: 10 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status.Waves[0].Clusters[0] != "eu1" {
		t.Fatalf("canary is %v, want eu1", r.Status.Waves[0].Clusters)
	}
	start := time.Now()
	waitFor(t, "the rollout to halt", 90*time.Second, func() bool {
		h.clk.Step(time.Second)
		if err := h.ctrl.TickAll(ctx); err != nil {
			t.Fatal(err)
		}
		r, err = h.ctrl.Get(ctx, "bad")
		return err == nil && r.Status.Phase != fr.PhaseProgressing
	})
	t.Logf("halted %s after the rollout began: %s", time.Since(start).Round(time.Millisecond), r.Status.Message)
	if r.Status.Phase != fr.PhaseHalted || !strings.Contains(r.Status.Message, "eu1") {
		t.Fatalf("rollout %s: %s, want Halted at eu1", r.Status.Phase, r.Status.Message)
	}
	if !agents["eu1"].everAttempted(bad) {
		t.Fatal("the canary never attempted the bad commit")
	}
	if g := h.gitops(t, "eu1"); g.PinnedCommit != good {
		t.Fatalf("canary pinned %q after the halt, want rollback to %s", g.PinnedCommit, good)
	}
	waitFor(t, "eu1 to sync the good commit again", time.Minute, func() bool {
		st := agents["eu1"].syncer.Status()
		return st.AttemptedCommit == good && st.AppliedCommit == good && st.Ready()
	})
	if q := agents["eu1"].quota(t); q != "64" {
		t.Fatalf("canary quota %s after the broken revision, want 64 (nothing applied)", q)
	}
	if agents["us1"].everAttempted(bad) || h.gitops(t, "us1").PinnedCommit != "" {
		t.Fatal("the second wave was touched by the halted rollout")
	}

	fixed := push(t, url, map[string]string{"base/quota.yaml": quotaYAML("128")})
	if _, err := h.ctrl.Create(ctx, rollout.CreateRequest{Name: "fixed", Revision: fixed, Waves: "1,100%", Soak: time.Minute, WaveTimeout: 10 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the fixed rollout to succeed", 2*time.Minute, func() bool {
		h.clk.Step(20 * time.Second)
		if err := h.ctrl.TickAll(ctx); err != nil {
			t.Fatal(err)
		}
		r, err = h.ctrl.Get(ctx, "fixed")
		if err == nil && r.Status.Phase == fr.PhaseHalted {
			t.Fatalf("fixed rollout halted: %s", r.Status.Message)
		}
		return err == nil && r.Status.Phase == fr.PhaseSucceeded
	})
	for name, a := range agents {
		if g := h.gitops(t, name); g.AppliedCommit != fixed {
			t.Fatalf("%s applied %s, want %s", name, g.AppliedCommit, fixed)
		}
		if q := a.quota(t); q != "128" {
			t.Fatalf("%s quota %s, want 128", name, q)
		}
	}
	h.noCredentialsOnHub(ctx, t)
}

func quotaYAML(gpus string) string {
	return "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: gpu-quota\n  namespace: fleet\nspec:\n  hard:\n    requests.nvidia.com/gpu: \"" + gpus + "\"\n"
}
