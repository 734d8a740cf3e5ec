// SPDX-License-Identifier: Apache-2.0

package hub

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"testing"

	"google.golang.org/grpc/credentials"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/cahash"
	"github.com/shoal-dev/shoal/hub/pki"
)

// agent is a registered agent's client.
type agent struct {
	name string
	cert tls.Certificate
	cl   shoalv1.ClustersClient
	// kubeconfig is the scoped hub-cluster kubeconfig (hub with --kubeconfig).
	kubeconfig []byte
}

// createToken makes a join token with the admin identity.
func createToken(t *testing.T, ctx context.Context, admin shoalv1.ClustersClient, ttlSeconds int64, usages int32) *shoalv1.CreateJoinTokenResponse {
	t.Helper()
	resp, err := admin.CreateJoinToken(ctx, &shoalv1.CreateJoinTokenRequest{TtlSeconds: ttlSeconds, Usages: usages})
	if err != nil {
		t.Fatalf("CreateJoinToken: %v", err)
	}
	return resp
}

// register registers a cluster the way shoal-agent does: no client
// certificate, a fresh key and CSR, the CA pinned by its hash.
func register(t *testing.T, ctx context.Context, h *hubProc, token, name, uid string) (*agent, error) {
	t.Helper()
	key, err := pki.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := pki.NewCSR(key, pki.AgentCommonName(name), pki.AgentGroup)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.anonymous(t).Register(ctx, &shoalv1.RegisterRequest{
		Token: token, ClusterName: name, ClusterUid: uid, CsrPem: csr, AgentVersion: "v0.0.0-test",
		Labels: map[string]string{"region": "test"},
	})
	if err != nil {
		return nil, err
	}
	ca, err := pki.ParseCertificatePEM(resp.CaPem)
	if err != nil || !cahash.Matches(ca, caHash(t, h)) {
		t.Fatalf("Register returned a CA that does not match the hub's CA hash (%v)", err)
	}
	keyPEM, _ := pki.EncodePrivateKeyPEM(key)
	cert, err := tls.X509KeyPair(resp.CertificatePem, keyPEM)
	if err != nil {
		t.Fatalf("agent certificate: %v", err)
	}
	var cl v1alpha1.Cluster
	if err := json.Unmarshal(resp.Cluster.Json, &cl); err != nil || cl.Name != name || cl.Spec.UID != uid {
		t.Fatalf("Register returned cluster %+v, %v", cl.ObjectMeta, err)
	}
	return &agent{name: name, cert: cert, cl: h.dial(t, agentCreds(t, h, cert)), kubeconfig: resp.HubKubeconfig}, nil
}

// redial gives the agent a connection that lives as long as t (the one
// made by register closes with the subtest that registered).
func (a *agent) redial(t *testing.T, h *hubProc) { a.cl = h.dial(t, agentCreds(t, h, a.cert)) }

func agentCreds(t *testing.T, h *hubProc, cert tls.Certificate) credentials.TransportCredentials {
	t.Helper()
	c := *h.adminContext()
	c.CertData, c.KeyData = "", ""
	cfg, err := c.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Certificates = []tls.Certificate{cert}
	return credentials.NewTLS(cfg)
}

func caHash(t *testing.T, h *hubProc) string {
	t.Helper()
	ca, err := pki.ParseCertificatePEM([]byte(h.adminContext().CAData))
	if err != nil {
		t.Fatal(err)
	}
	return cahash.Of(ca)
}

// heartbeat sends one heartbeat and a small inventory.
func (a *agent) heartbeat(ctx context.Context) error {
	if _, err := a.cl.Heartbeat(ctx, &shoalv1.HeartbeatRequest{AgentVersion: "v0.0.0-test", ClusterReachable: true}); err != nil {
		return err
	}
	inv := []byte(`{"name":"` + a.name + `","nodes":[{"name":"n1","product":"NVIDIA-H100-80GB-HBM3","capacityGPUs":8,"gpus":8,"usedGPUs":2,"ready":true,"rack":"r1"}]}`)
	_, err := a.cl.ReportInventory(ctx, &shoalv1.ReportInventoryRequest{Generation: 1, SessionId: "s1", InventoryJson: inv})
	return err
}

func getCluster(t *testing.T, ctx context.Context, admin shoalv1.ClustersClient, name string) *v1alpha1.Cluster {
	t.Helper()
	obj, err := admin.GetCluster(ctx, &shoalv1.GetClusterRequest{Name: name})
	if err != nil {
		t.Fatalf("GetCluster %s: %v", name, err)
	}
	var c v1alpha1.Cluster
	if err := json.Unmarshal(obj.Json, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}
