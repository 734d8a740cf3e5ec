// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/shoal-dev/shoal/agent"
	"github.com/shoal-dev/shoal/agent/hubclient"
	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	shoalv1alpha1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/cahash"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/internal/freeport"
	"github.com/shoal-dev/shoal/test/framework"
)

// TestRealHub registers a real agent with the real shoal-hub binary (built
// here, or $SHOAL_HUB_BIN) that issues hub-cluster credentials on the hub
// control plane, and checks the virtual node, the inventory it reports, and
// the cluster turning Ready and then, once the agent is gone, NotReady.
func TestRealHub(t *testing.T) {
	if testing.Short() {
		t.Skip("builds shoal-hub and starts a kube-apiserver")
	}
	dir := t.TempDir()
	bin := os.Getenv("SHOAL_HUB_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "shoal-hub")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/shoal-dev/shoal/cmd/shoal-hub").CombinedOutput()
		if err != nil {
			t.Fatalf("build shoal-hub: %v\n%s", err, out)
		}
	}
	kubeconfig := filepath.Join(dir, "hub.kubeconfig")
	writeKubeconfig(t, hubCP.Config, kubeconfig)
	addr, httpAddr, admin := freePort(t), freePort(t), filepath.Join(dir, "admin")
	var log bytes.Buffer
	cmd := exec.Command(bin, "--data-dir", filepath.Join(dir, "data"), "--listen", addr, "--http-listen", httpAddr,
		"--admin-config", admin, "--kubeconfig", kubeconfig, "--cluster-grace", "5s",
		// Shorter than the agent's default --fence-timeout (5m), which it
		// must give up for the hub's; Lost after 8s plus the 3s margin.
		"--cluster-fence-timeout", "8s", "--fence-margin", "3s", "-v=10")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	eventually(t, 60*time.Second, "shoal-hub ready", func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	ctx := t.Context()
	adm := adminClient(t, admin)
	tok, err := adm.CreateJoinToken(ctx, &shoalv1alpha1.CreateJoinTokenRequest{TtlSeconds: 600})
	if err != nil {
		t.Fatalf("create join token: %v\n%s", err, log.String())
	}
	if !servesCA(addr, tok.CaHash) {
		t.Fatal("shoal-hub does not send its CA certificate in the serving chain, so an agent cannot pin --ca-hash " +
			"before sending the join token (hub/pki.CA.ServerCertificate must append ca.Cert.Raw)")
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
	a, err := agent.New(agent.Config{HubAddress: addr, Token: tok.Token, CAHash: tok.CaHash, Cluster: "real1",
		Local: rest.CopyConfig(cp.Config), KubeletListen: "127.0.0.1:0", KubeletAddress: "127.0.0.1",
		KubeletClientCAFile: hubCP.KubeletClientCA.CAFile,
		HeartbeatInterval:   time.Second, Version: "v0.0.0-it"})
	if err != nil {
		t.Fatal(err)
	}
	var agentLog lockedBuffer
	actx, cancel := context.WithCancel(klog.NewContext(ctx,
		textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&agentLog), textlogger.Verbosity(10)))))
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	stopped := false
	stopAgent := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}
	defer stopAgent()
	eventually(t, 60*time.Second, "virtual node on the hub cluster", func(ctx context.Context) (bool, error) {
		n, err := hubAdmin.CoreV1().Nodes().Get(ctx, "shoal-real1-h100-80gb", metav1.GetOptions{})
		return err == nil && nodeReady(n) == corev1.ConditionTrue, err
	})
	eventually(t, 30*time.Second, "inventory at the hub", func(ctx context.Context) (bool, error) {
		obj, err := adm.GetInventory(ctx, &shoalv1alpha1.GetClusterRequest{Name: "real1"})
		if err != nil {
			return false, err
		}
		var inv fedinv.Cluster
		if err := json.Unmarshal(obj.Json, &inv); err != nil {
			return false, err
		}
		return len(inv.Nodes) == 1 && inv.FreeGPUs() == 8, nil
	})
	if _, err := wc.CoreV1().Secrets("shoal-system").Get(ctx, hubclient.SecretName, metav1.GetOptions{}); err != nil {
		t.Errorf("credentials secret: %v", err)
	}
	eventually(t, 30*time.Second, "cluster Ready at the hub", func(ctx context.Context) (bool, error) {
		return clusterState(ctx, adm, "real1") == v1alpha1.ClusterReady, nil
	})
	// The hub told its fence timeout: the agent fences by it, says so and
	// keeps it with its credentials for a restart inside a cut.
	eventually(t, 10*time.Second, "the hub's fence timeout kept with the credentials", func(ctx context.Context) (bool, error) {
		sec, err := wc.CoreV1().Secrets("shoal-system").Get(ctx, hubclient.SecretName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got := string(sec.Data["hub-fence-timeout"]); got != "8s" {
			return false, fmt.Errorf("hub-fence-timeout %q, want 8s", got)
		}
		return true, nil
	})
	if !strings.Contains(agentLog.String(), "exceeds the hub's --cluster-fence-timeout") {
		t.Errorf("the agent did not say that its fence timeout exceeds the hub's:\n%s", agentLog.String())
	}
	stopAgent() // the hub runs with --cluster-grace 5s
	// Neither the agent's log nor the hub's, both at -v=10, holds the
	// join token's secret.
	_, secret, _ := strings.Cut(tok.Token, ".")
	if agentLog.String() == "" || !strings.Contains(log.String(), "Cluster registered") {
		t.Fatalf("agent or hub log not captured, so the check proves nothing:\nagent:\n%s\nhub:\n%s", agentLog.String(), log.String())
	}
	for name, text := range map[string]string{"agent": agentLog.String(), "hub": log.String()} {
		if secret == "" || strings.Contains(text, secret) {
			t.Errorf("the %s log holds the join token secret", name)
		}
	}
	eventually(t, 30*time.Second, "cluster NotReady after the agent died", func(ctx context.Context) (bool, error) {
		return clusterState(ctx, adm, "real1") == v1alpha1.ClusterNotReady, nil
	})
	eventually(t, 30*time.Second, "cluster Lost after the fence timeout plus --fence-margin", func(ctx context.Context) (bool, error) {
		obj, err := adm.GetCluster(ctx, &shoalv1alpha1.GetClusterRequest{Name: "real1"})
		if err != nil {
			return false, err
		}
		var c v1alpha1.Cluster
		if err := json.Unmarshal(obj.Json, &c); err != nil {
			return false, err
		}
		msg := ""
		if rc := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ClusterConditionReady); rc != nil {
			msg = rc.Message
		}
		if c.Status.State != v1alpha1.ClusterLost || !strings.Contains(msg, "fence timeout 8s plus the margin 3s") {
			return false, fmt.Errorf("state %s: %q", c.Status.State, msg)
		}
		return true, nil
	})
}

func clusterState(ctx context.Context, adm shoalv1alpha1.ClustersClient, name string) v1alpha1.ClusterState {
	obj, err := adm.GetCluster(ctx, &shoalv1alpha1.GetClusterRequest{Name: name})
	if err != nil {
		return ""
	}
	var c v1alpha1.Cluster
	if err := json.Unmarshal(obj.Json, &c); err != nil {
		return ""
	}
	return c.Status.State
}

// servesCA reports whether the server's TLS chain holds the CA with the hash.
func servesCA(addr, hash string) bool {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}) //nolint:gosec // inspecting the chain only
	if err != nil {
		return false
	}
	defer conn.Close()
	for _, c := range conn.ConnectionState().PeerCertificates {
		if cahash.Of(c) == hash {
			return true
		}
	}
	return false
}

func adminClient(t *testing.T, path string) shoalv1alpha1.ClustersClient {
	t.Helper()
	cfg, err := configv1alpha1.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfg.Context("")
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := c.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(c.Hub, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return shoalv1alpha1.NewClustersClient(conn)
}

func writeKubeconfig(t *testing.T, cfg *rest.Config, path string) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "admin"}
	kc.CurrentContext = "hub"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	a, err := freeport.Addr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// lockedBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
