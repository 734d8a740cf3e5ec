// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	shoalv1alpha1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/federation/cahash"
)

// AgentCommonName is the subject CN of a cluster's agent certificate.
func AgentCommonName(cluster string) string { return "shoal:agent:" + cluster }

// Registration is what Register needs.
type Registration struct {
	// Address is the hub's host:port.
	Address string
	// Token is the join token from `shoal cluster token create`.
	Token string
	// CAHash pins the hub CA (sha256:<hex>).
	CAHash string
	// Cluster is the cluster's name in the federation.
	Cluster string
	// ClusterUID is the UID of the cluster's kube-system namespace.
	ClusterUID   string
	AgentVersion string
	Labels       map[string]string
}

// Register creates a fresh ECDSA P-256 key, sends a CSR with the join token
// to the hub over a connection pinned to the CA hash, and returns the
// resulting credentials.
func Register(ctx context.Context, r Registration) (*Credentials, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate agent key: %w", err)
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader,
		&x509.CertificateRequest{Subject: pkix.Name{CommonName: AgentCommonName(r.Cluster)}}, key)
	if err != nil {
		return nil, fmt.Errorf("create CSR: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode agent key: %w", err)
	}
	var pinFailed atomic.Bool
	conn, err := grpc.NewClient(r.Address, grpc.WithTransportCredentials(credentials.NewTLS(pinnedTLSConfig(serverName(r.Address), r.CAHash, &pinFailed))))
	if err != nil {
		return nil, fmt.Errorf("dial hub %s: %w", r.Address, err)
	}
	defer conn.Close()
	resp, err := shoalv1alpha1.NewClustersClient(conn).Register(ctx, &shoalv1alpha1.RegisterRequest{
		Token: r.Token, ClusterName: r.Cluster, ClusterUid: r.ClusterUID,
		CsrPem:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}),
		AgentVersion: r.AgentVersion, Labels: r.Labels,
	})
	if err != nil && pinFailed.Load() {
		return nil, fmt.Errorf("%w (%s): %v", ErrCAHashMismatch, r.Address, err)
	}
	if err != nil {
		return nil, fmt.Errorf("register with hub: %w", err)
	}
	if err := checkCA(resp.GetCaPem(), r.CAHash); err != nil {
		return nil, err
	}
	return &Credentials{
		Cluster: r.Cluster, CertPEM: resp.GetCertificatePem(), CAPEM: resp.GetCaPem(),
		KeyPEM:          pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		HubKubeconfig:   resp.GetHubKubeconfig(),
		HubFenceTimeout: time.Duration(resp.GetFenceTimeoutSeconds()) * time.Second,
	}, nil
}

// checkCA makes sure the trust bundle the hub returned holds a pinned CA.
func checkCA(caPEM []byte, caHash string) error {
	want := pins(caHash)
	var got []string
	for rest := caPEM; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		ca, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCAHashMismatch, err)
		}
		if slices.Contains(want, cahash.Of(ca)) {
			return nil
		}
		got = append(got, cahash.Of(ca))
	}
	if len(got) == 0 {
		return fmt.Errorf("%w: no CA in the registration response", ErrCAHashMismatch)
	}
	return fmt.Errorf("%w: registration returned CA %s", ErrCAHashMismatch, strings.Join(got, ","))
}

// serverName is the host part of a host:port address.
func serverName(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
