// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"crypto/tls"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/rest"
)

// TestGatewayCertificateTrustedOnlyFromGateway: the certificate metadata
// of the REST gateway names the caller only on the in-process gateway
// connection; from a TLS peer (with or without its own certificate) it is
// ignored.
func TestGatewayCertificateTrustedOnlyFromGateway(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := ca.ClientCertificate(pki.UserCommonName("eve"), []string{pki.UserGroup}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.ParseCertificatePEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	md := metadata.Pairs(rest.PeerCertificateMetadata, string(cert.Raw))
	gw := peer.NewContext(context.Background(), &peer.Peer{AuthInfo: gatewayInfo{}})
	if got := peerCertificate(metadata.NewIncomingContext(gw, md)); got == nil || !got.Equal(cert) {
		t.Fatalf("gateway peer with the metadata: %v, want the forwarded certificate", got)
	}
	if got := peerCertificate(gw); got != nil {
		t.Fatalf("gateway peer without the metadata: %v, want none", got)
	}
	bad := metadata.Pairs(rest.PeerCertificateMetadata, "not DER")
	if got := peerCertificate(metadata.NewIncomingContext(gw, bad)); got != nil {
		t.Fatalf("gateway peer with garbage: %v, want none", got)
	}
	if got := peerCertificate(metadata.NewIncomingContext(withPeer(nil), md)); got != nil {
		t.Fatalf("TLS peer without a certificate, with the metadata: %v, want none", got)
	}
	other, _, err := ca.ClientCertificate(pki.UserCommonName("mallory"), []string{pki.UserGroup}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	own, _ := pki.ParseCertificatePEM(other)
	if got := peerCertificate(metadata.NewIncomingContext(withPeer(own), md)); got == nil || !got.Equal(own) {
		t.Fatalf("TLS peer with its own certificate and the metadata: %v, want its own", got)
	}
}

// TestServerCredsSkipTLSOnlyForTheGateway: the server's handshake skips
// TLS for connections of the in-process gateway listener only.
func TestServerCredsSkipTLSOnlyForTheGateway(t *testing.T) {
	creds := serverCreds{TransportCredentials: credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13})}
	l := newGatewayListener()
	defer func() { _ = l.Close() }()
	go func() {
		c, err := l.DialContext(context.Background())
		if err == nil {
			defer func() { _ = c.Close() }()
		}
	}()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if _, info, err := creds.ServerHandshake(c); err != nil || info.AuthType() != (gatewayInfo{}).AuthType() {
		t.Fatalf("gateway connection: %v, %v; want the gateway's AuthInfo", info, err)
	}
	a, b := net.Pipe()
	defer func() { _ = a.Close(); _ = b.Close() }()
	go func() { _ = a.Close() }() // a client that closes: the TLS handshake fails
	if _, info, err := creds.ServerHandshake(b); err == nil {
		t.Fatalf("a network connection got %v without a TLS handshake", info)
	}
}

// TestRESTTLSOffersHTTP1: the REST listener offers h2 and http/1.1 (curl,
// Python's urllib), also through the rotation-aware GetConfigForClient.
func TestRESTTLSOffersHTTP1(t *testing.T) {
	base := &tls.Config{NextProtos: []string{"h2"}}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) { return &tls.Config{NextProtos: []string{"h2"}}, nil }
	c := restTLS(base)
	want := []string{"h2", "http/1.1"}
	got, err := c.GetConfigForClient(&tls.ClientHelloInfo{})
	if err != nil || !slices.Equal(c.NextProtos, want) || !slices.Equal(got.NextProtos, want) {
		t.Fatalf("NextProtos %v, per client %v (%v); want %v", c.NextProtos, got.NextProtos, err, want)
	}
	if !slices.Equal(base.NextProtos, []string{"h2"}) {
		t.Fatalf("the gRPC configuration changed: %v", base.NextProtos)
	}
}
