// SPDX-License-Identifier: Apache-2.0

package rollout_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shoalagent "github.com/shoal-dev/shoal/agent"
	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fr "github.com/shoal-dev/shoal/federation/rollout"
	"github.com/shoal-dev/shoal/hub/app"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/framework"
)

// realHub is the hub's server (mTLS gRPC), registry and rollout controller
// in process, and an admin client.
type realHub struct {
	reg      *registry.Registry
	ca       *pki.CA
	addr     string
	gitops   shoalv1.GitOpsClient
	rollouts shoalv1.RolloutsClient
}

func startRealHub(ctx context.Context, t *testing.T) *realHub {
	t.Helper()
	port, err := store.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := app.DefaultConfig()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen, cfg.AdminConfig = t.TempDir(), fmt.Sprintf("127.0.0.1:%d", port), "", ""
	cfg.Etcd = app.Etcd{Endpoints: []string{hubStore.ClientURL()}, Prefix: "/realhub/", InsecureAllowPlaintext: true} // loopback test etcd
	cfg.ElectionTTL, cfg.ClusterGrace, cfg.Identity = 2*time.Second, 10*time.Second, "test"
	cfg.Rollout = rollout.Config{Interval: 200 * time.Millisecond}
	hub, err := app.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hub.Run(ctx) }()
	t.Cleanup(func() {
		if err := hub.Err(); err != nil {
			t.Errorf("hub: %v", err)
		}
	})
	select {
	case <-hub.Ready():
	case <-hub.Done():
		t.Fatalf("hub did not start: %v", hub.Err())
	}
	ca := hub.CA()
	h := &realHub{ca: ca, addr: hub.Address(), reg: hub.Registry()}
	certPEM, keyPEM, err := ca.AdminCertificate()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{cert}, RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	h.gitops, h.rollouts = shoalv1.NewGitOpsClient(conn), shoalv1.NewRolloutsClient(conn)
	return h
}

// startRealAgent registers and runs shoal's agent, GitOps on, in one workload cluster.
func (h *realHub) startRealAgent(ctx context.Context, t *testing.T, cluster string, local *rest.Config) {
	t.Helper()
	c, err := client.New(local, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shoal-realhub"}}); err != nil {
		t.Fatal(err)
	}
	token, _, err := h.reg.CreateToken(ctx, registry.TokenOptions{Description: "rollout test " + cluster})
	if err != nil {
		t.Fatal(err)
	}
	// No API server dials these agents' kubelet endpoints: any CA will do.
	kubeletCA, err := framework.NewKubeletClientCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := shoalagent.New(shoalagent.Config{HubAddress: h.addr, Token: token, CAHash: h.ca.Hash(), Cluster: cluster,
		Local: rest.CopyConfig(local), Namespace: "shoal-realhub", HeartbeatInterval: time.Second,
		KubeletClientCAFile: kubeletCA.CAFile,
		InventoryInterval:   200 * time.Millisecond, Version: "v0.0.0-test",
		GitOps: shoalagent.GitOps(t.TempDir(), "shoal-realhub", 500*time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Run(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "agent %s stopped: %v\n", cluster, err)
		}
	}()
	t.Cleanup(func() { <-done })
}

// status is every cluster's record as `shoal gitops status` reads it.
func (h *realHub) status(ctx context.Context, t *testing.T) map[string]*v1alpha1.Cluster {
	t.Helper()
	resp, err := h.gitops.ListStatus(ctx, &shoalv1.ListGitOpsStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*v1alpha1.Cluster{}
	for _, o := range resp.Items {
		var c v1alpha1.Cluster
		if err := json.Unmarshal(o.Json, &c); err != nil {
			t.Fatal(err)
		}
		if c.Status.GitOps == nil {
			c.Status.GitOps = &v1alpha1.GitOpsStatus{}
		}
		out[c.Name] = &c
	}
	return out
}

func (h *realHub) rollout(ctx context.Context, t *testing.T, name string) *v1alpha1.Rollout {
	t.Helper()
	o, err := h.rollouts.GetRollout(ctx, &shoalv1.RolloutRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	var r v1alpha1.Rollout
	if err := json.Unmarshal(o.Json, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func quotaIn(t *testing.T, cfg *rest.Config, ns string) string {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var q corev1.ResourceQuota
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "gpu-quota"}, &q); err != nil {
		t.Fatal(err)
	}
	v := q.Spec.Hard["requests.nvidia.com/gpu"]
	return v.String()
}

// TestRolloutThroughHubAndAgents runs the whole path: shoal's agents
// (agent.GitOps) register with the hub over mTLS, report GitOps status with
// ReportGitOpsStatus and sync the source it answers; the admin sets sources
// and creates rollouts over gRPC; the leader-elected controller ticks on the
// real clock. A broken base halts at the canary and is rolled back; the
// second wave never attempts it; a fixed commit reaches both clusters.
func TestRolloutThroughHubAndAgents(t *testing.T) {
	if skipAll != "" {
		t.Skip(skipAll)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// A Git server without auth: agent.GitOps refuses to send credentials
	// over plain http (credentials are covered by TestRolloutBrokenBaseHaltsAtCanary).
	srv, err := gittestserver.NewTempGitServer()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(srv.Root()) }()
	if err := srv.StartHTTP(); err != nil {
		t.Fatal(err)
	}
	defer srv.StopHTTP()
	fixture, err := filepath.Abs("../../testdata/gitops/fleet")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.InitRepo(fixture, "main", "fleet.git"); err != nil {
		t.Fatal(err)
	}
	url := srv.HTTPAddress() + "/fleet.git"
	good := push(t, url, nil)

	h := startRealHub(ctx, t)
	for _, name := range []string{"eu1", "us1"} {
		h.startRealAgent(ctx, t, name, clusters[name])
	}
	waitFor(t, "both clusters Ready on the hub", time.Minute, func() bool {
		st := h.status(ctx, t)
		return len(st) == 2 && st["eu1"].Status.State == v1alpha1.ClusterReady && st["us1"].Status.State == v1alpha1.ClusterReady
	})
	for _, name := range []string{"eu1", "us1"} {
		// eu1 pins the good commit; us1 follows main, and the rollout
		// freezes it at what it runs until its wave.
		ref := v1alpha1.GitOpsRef{Branch: "main", Commit: good}
		if name == "us1" {
			ref.Commit = ""
		}
		src, _ := json.Marshal(v1alpha1.GitOpsSource{URL: url, Ref: ref, Path: "clusters/" + name, Prune: true})
		if _, err := h.gitops.SetSource(ctx, &shoalv1.SetGitOpsSourceRequest{Cluster: name, SourceJson: src}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	waitFor(t, "both clusters to apply the good commit", time.Minute, func() bool {
		st := h.status(ctx, t)
		return st["eu1"].Status.GitOps.AppliedCommit == good && st["us1"].Status.GitOps.AppliedCommit == good &&
			st["eu1"].Status.GitOps.Health == "Healthy" && st["us1"].Status.GitOps.Health == "Healthy"
	})
	t.Logf("source set to both clusters applied and healthy on the hub: %s", time.Since(start).Round(time.Millisecond))

	bad := push(t, url, map[string]string{"base/quota.yaml": quotaYAML("sixty-four")})
	if _, err := h.rollouts.CreateRollout(ctx, &shoalv1.CreateRolloutRequest{Name: "bad", Revision: bad, Waves: "1,100%", SoakSeconds: 2}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	var seenUS1 []string
	waitFor(t, "the rollout to halt", time.Minute, func() bool {
		seenUS1 = append(seenUS1, h.status(ctx, t)["us1"].Status.GitOps.AttemptedCommit)
		return h.rollout(ctx, t, "bad").Status.Phase != fr.PhaseProgressing
	})
	r := h.rollout(ctx, t, "bad")
	t.Logf("halted %s after create: %s", time.Since(start).Round(time.Millisecond), r.Status.Message)
	if r.Status.Phase != fr.PhaseHalted {
		t.Fatalf("rollout %s: %s, want Halted", r.Status.Phase, r.Status.Message)
	}
	waitFor(t, "the canary back on the good commit", time.Minute, func() bool {
		g := h.status(ctx, t)["eu1"].Status.GitOps
		return g.PinnedCommit == good && g.AttemptedCommit == good && g.AppliedCommit == good && g.Message == ""
	})
	us1 := h.status(ctx, t)["us1"].Status.GitOps
	for _, c := range append(seenUS1, us1.AttemptedCommit) {
		if c != good {
			t.Fatalf("second wave attempted %s during the halted rollout", c)
		}
	}
	if us1.PinnedCommit != good || quotaIn(t, clusters["us1"], "fleet-us1") != "64" || quotaIn(t, clusters["eu1"], "fleet-eu1") != "64" {
		t.Fatalf("second wave not frozen at the good commit (pinned %q) or a quota changed", us1.PinnedCommit)
	}

	fixed := push(t, url, map[string]string{"base/quota.yaml": quotaYAML("128")})
	if _, err := h.rollouts.CreateRollout(ctx, &shoalv1.CreateRolloutRequest{Name: "fixed", Revision: fixed, Waves: "1,100%", SoakSeconds: 2}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitFor(t, "the fixed rollout to finish", 2*time.Minute, func() bool {
		return h.rollout(ctx, t, "fixed").Status.Phase != fr.PhaseProgressing
	})
	if r := h.rollout(ctx, t, "fixed"); r.Status.Phase != fr.PhaseSucceeded {
		t.Fatalf("fixed rollout %s: %s", r.Status.Phase, r.Status.Message)
	}
	t.Logf("fixed commit through 2 waves (soak 2s each): %s", time.Since(start).Round(time.Millisecond))
	for _, name := range []string{"eu1", "us1"} {
		if q := quotaIn(t, clusters[name], "fleet-"+name); q != "128" {
			t.Fatalf("%s quota %s, want 128", name, q)
		}
	}
	checkCLI(t, h, url, good, fixed)
}
