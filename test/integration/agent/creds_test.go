// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/shoal-dev/shoal/agent"
	"github.com/shoal-dev/shoal/agent/hubclient"
	shoalv1alpha1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/hubcluster"
	"github.com/shoal-dev/shoal/test/framework"
)

// realHub is a shoal-hub process on a fixed address, restartable.
type realHub struct {
	t                   *testing.T
	bin, dataDir, admin string
	addr, httpAddr      string
	args                []string
	cmd                 *exec.Cmd
	log                 *bytes.Buffer
	exited              chan struct{}
}

func startRealHub(t *testing.T, extra ...string) *realHub {
	t.Helper()
	dir := t.TempDir()
	bin := os.Getenv("SHOAL_HUB_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "shoal-hub")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/shoal-dev/shoal/cmd/shoal-hub").CombinedOutput(); err != nil {
			t.Fatalf("build shoal-hub: %v\n%s", err, out)
		}
	}
	kubeconfig := filepath.Join(dir, "hub.kubeconfig")
	writeKubeconfig(t, hubCP.Config, kubeconfig)
	h := &realHub{t: t, bin: bin, dataDir: filepath.Join(dir, "data"), admin: filepath.Join(dir, "admin"),
		addr: freePort(t), httpAddr: freePort(t)}
	h.args = append([]string{"--data-dir", h.dataDir, "--listen", h.addr, "--http-listen", h.httpAddr,
		"--admin-config", h.admin, "--kubeconfig", kubeconfig, "--cluster-grace", "5s"}, extra...)
	h.log = &bytes.Buffer{} // every run's, one after the other
	h.start()
	t.Cleanup(h.stop)
	return h
}

func (h *realHub) start() {
	h.t.Helper()
	h.cmd = exec.Command(h.bin, h.args...)
	h.cmd.Stdout, h.cmd.Stderr = h.log, h.log
	if err := h.cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.exited = make(chan struct{})
	go func() { _ = h.cmd.Wait(); close(h.exited) }()
	eventually(h.t, 60*time.Second, "shoal-hub ready", func(context.Context) (bool, error) {
		select {
		case <-h.exited:
			h.t.Fatalf("shoal-hub exited:\n%s", h.log)
		default:
		}
		resp, err := http.Get("http://" + h.httpAddr + "/readyz")
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

func (h *realHub) stop() {
	if h.cmd == nil {
		return
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
	case <-time.After(30 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.exited
	}
	h.cmd = nil
}

// runAgent runs a shoal-agent for cluster on the workload cluster at cfg
// until the returned stop is called.
func runAgent(t *testing.T, cfg agent.Config, log *lockedBuffer) (stop func()) {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(),
		textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(log), textlogger.Verbosity(10)))))
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func storedCreds(t *testing.T, ctx context.Context, wc kubernetes.Interface) *hubclient.Credentials {
	t.Helper()
	c, err := hubclient.SecretStore{Client: wc, Namespace: "shoal-system"}.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func leafCert(t *testing.T, c *hubclient.Credentials) *x509.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
	if err != nil {
		t.Fatalf("stored key and certificate: %v", err)
	}
	l, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func hubToken(t *testing.T, kubeconfig []byte) string {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.BearerToken
}

// clusterRecord reads cluster name at the hub as admin.
func clusterRecord(ctx context.Context, adm shoalv1alpha1.ClustersClient, name string) (*v1alpha1.Cluster, error) {
	obj, err := adm.GetCluster(ctx, &shoalv1alpha1.GetClusterRequest{Name: name})
	if err != nil {
		return nil, err
	}
	var c v1alpha1.Cluster
	return &c, json.Unmarshal(obj.Json, &c)
}

// TestCredentialLifecycle runs a real agent against the real shoal-hub
// (1-minute agent certificates) and real API servers:
//   - offline past its hub-cluster token's life: the agent is stopped, its
//     token stops working (its ServiceAccount is recreated, as the API server
//     refuses an expired token), and the agent started again on its stored
//     credentials gets new ones from the hub over mTLS and serves its
//     virtual node again;
//   - renewal: the agent renews its certificate at two thirds of its life,
//     stores the new key and certificate, switches to them without a
//     restart, and the old certificate is refused by the hub;
//   - CA rotation: after `shoal-hub rotate-ca` and a hub restart the agent is
//     told to renew, renews onto the new CA and stores the bundle of both;
//     after the overlap, and another restart, it still reaches the hub (now
//     serving the new CA's certificate).
func TestCredentialLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds shoal-hub and starts a kube-apiserver")
	}
	h := startRealHub(t, "--agent-cert-validity", "1m", "-v=10")
	ctx := t.Context()
	adm := adminClient(t, h.admin)
	tok, err := adm.CreateJoinToken(ctx, &shoalv1alpha1.CreateJoinTokenRequest{TtlSeconds: 600})
	if err != nil {
		t.Fatalf("create join token: %v\n%s", err, h.log)
	}
	cp, err := framework.StartControlPlane()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.Stop() }()
	wc := kubernetes.NewForConfigOrDie(cp.Config)
	if _, err := wc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shoal-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := createNode(ctx, wc, gpuNode("g1", "NVIDIA-H100-80GB-HBM3", "r1", map[string]int64{fedinv.ResourceGPU: 8})); err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{HubAddress: h.addr, Token: tok.Token, CAHash: tok.CaHash, Cluster: "cred1",
		Local: rest.CopyConfig(cp.Config), KubeletListen: "127.0.0.1:0", KubeletAddress: "127.0.0.1",
		KubeletClientCAFile: hubCP.KubeletClientCA.CAFile, HeartbeatInterval: time.Second, Version: "v0.0.0-it"}
	const node = "shoal-cred1-h100-80gb"
	var agentLog lockedBuffer
	stop := runAgent(t, cfg, &agentLog)
	eventually(t, 60*time.Second, "virtual node on the hub cluster", func(ctx context.Context) (bool, error) {
		n, err := hubAdmin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && nodeReady(n) == corev1.ConditionTrue, err
	})

	// Offline past the token's life.
	stop()
	before := storedCreds(t, ctx, wc)
	if err := hubAdmin.CoreV1().ServiceAccounts(hubcluster.Namespace).Delete(ctx, hubcluster.ServiceAccountName("cred1"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	oldKube := kubernetes.NewForConfigOrDie(func() *rest.Config {
		c, err := clientcmd.RESTConfigFromKubeConfig(before.HubKubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}())
	eventually(t, 30*time.Second, "the agent's old hub token refused", func(ctx context.Context) (bool, error) {
		_, err := oldKube.CoordinationV1().Leases(hubcluster.LeaseNamespace).Get(ctx, node, metav1.GetOptions{})
		return apierrors.IsUnauthorized(err), nil
	})
	cfg.Token, cfg.CAHash = "", "" // as after the join Secret is gone: stored credentials only
	back := time.Now()
	stop = runAgent(t, cfg, &agentLog)
	eventually(t, 60*time.Second, "hub-cluster credentials reissued and stored", func(ctx context.Context) (bool, error) {
		c := storedCreds(t, ctx, wc)
		return hubToken(t, c.HubKubeconfig) != hubToken(t, before.HubKubeconfig), nil
	})
	eventually(t, 60*time.Second, "node lease renewed with the reissued token", func(ctx context.Context) (bool, error) {
		l, err := hubAdmin.CoordinationV1().Leases(hubcluster.LeaseNamespace).Get(ctx, node, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(back), err
	})
	if !strings.Contains(agentLog.String(), "The hub reissued the hub-cluster credentials") {
		t.Errorf("the agent did not log the reissue:\n%s", agentLog.String())
	}

	// Renewal at two thirds of the certificate's life.
	first := storedCreds(t, ctx, wc)
	firstLeaf := leafCert(t, first)
	eventually(t, 70*time.Second, "certificate renewed, stored and in use at the hub", func(ctx context.Context) (bool, error) {
		c := storedCreds(t, ctx, wc)
		l := leafCert(t, c)
		cl, err := clusterRecord(ctx, adm, "cred1")
		if err != nil {
			return false, err
		}
		return l.SerialNumber.Cmp(firstLeaf.SerialNumber) != 0 &&
			cl.Annotations[v1alpha1.AnnotationCertificateSerial] == l.SerialNumber.Text(16), nil
	})
	if due := firstLeaf.NotBefore.Add(time.Duration(float64(firstLeaf.NotAfter.Sub(firstLeaf.NotBefore)) * hubclient.RenewFraction)); time.Now().Before(due) {
		t.Errorf("renewed before two thirds of the certificate's life (%v)", due)
	}
	_, err = dialAgentCreds(t, h.addr, first).Heartbeat(ctx, &shoalv1alpha1.HeartbeatRequest{})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("the replaced certificate: %v, want PermissionDenied", err)
	}
	eventually(t, 30*time.Second, "cluster Ready after the renewal", func(ctx context.Context) (bool, error) {
		return clusterState(ctx, adm, "cred1") == v1alpha1.ClusterReady, nil
	})

	// CA rotation.
	const overlap = 25 * time.Second
	rotated := time.Now()
	if out, err := exec.Command(h.bin, "rotate-ca", "--data-dir", h.dataDir, "--admin-config", h.admin, "--listen", h.addr,
		"--overlap", overlap.String()).CombinedOutput(); err != nil {
		t.Fatalf("rotate-ca: %v\n%s", err, out)
	}
	h.stop()
	h.start()
	adm = adminClient(t, h.admin)
	oldCA, err := x509.ParseCertificate(func() []byte { b, _ := pemBlock(first.CAPEM); return b }())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "agent renewed onto the new CA with the bundle of both", func(ctx context.Context) (bool, error) {
		c := storedCreds(t, ctx, wc)
		pool := x509.NewCertPool()
		if n := strings.Count(string(c.CAPEM), "BEGIN CERTIFICATE"); n != 2 || !pool.AppendCertsFromPEM(c.CAPEM) {
			return false, nil
		}
		l := leafCert(t, c)
		if l.CheckSignatureFrom(oldCA) == nil {
			return false, nil
		}
		_, err := l.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return err == nil, err
	})
	time.Sleep(time.Until(rotated.Add(overlap + time.Second))) // a known deadline, not a condition
	h.stop()
	restarted := time.Now()
	h.start()
	adm = adminClient(t, h.admin)
	eventually(t, 30*time.Second, "agent heartbeats after the overlap, to a hub serving the new CA's certificate", func(ctx context.Context) (bool, error) {
		cl, err := clusterRecord(ctx, adm, "cred1")
		return err == nil && cl.Status.LastHeartbeat != nil && cl.Status.LastHeartbeat.After(restarted), err
	})
	stop()
	h.stop()
	// Neither log holds the join token's secret, an agent key or a
	// hub-cluster token, old or reissued.
	_, secret, _ := strings.Cut(tok.Token, ".")
	last := storedCreds(t, ctx, wc)
	secrets := map[string]string{"join token secret": secret, "agent key": string(first.KeyPEM), "last agent key": string(last.KeyPEM),
		"old hub token": hubToken(t, before.HubKubeconfig), "reissued hub token": hubToken(t, last.HubKubeconfig)}
	for name, text := range map[string]string{"agent": agentLog.String(), "hub": h.log.String()} {
		if !strings.Contains(text, "enew") { // the logs were captured
			t.Fatalf("the %s log says nothing of the renewals:\n%s", name, text)
		}
		for what, v := range secrets {
			if v == "" || strings.Contains(text, v) {
				t.Errorf("the %s log holds the %s", name, what)
			}
		}
	}
}

// dialAgentCreds is a Clusters client with the agent credentials c.
func dialAgentCreds(t *testing.T, addr string, c *hubclient.Credentials) shoalv1alpha1.ClustersClient {
	t.Helper()
	tlsCfg, err := c.TLSConfig("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return shoalv1alpha1.NewClustersClient(conn)
}

// pemBlock is the first PEM block's bytes.
func pemBlock(data []byte) ([]byte, bool) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, false
	}
	return b.Bytes, true
}
