// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"

	"github.com/shoal-dev/shoal/hub/rest"
)

// The REST face (hub/rest) is a grpc-gateway that calls this server's
// gRPC methods over an in-process connection (gatewayListener), so that
// every REST call passes the same interceptors (authentication, the
// authorization table, audit, metrics) as a gRPC call. The REST listener
// terminates TLS with the same configuration as gRPC (client certificates
// of the hub CA verified if given); the gateway hands the hub the
// verified leaf certificate as metadata (rest.PeerCertificateMetadata),
// which the hub believes only from that in-process connection, whose
// peers carry gatewayInfo: no network peer can reach it.

// gatewayInfo is the AuthInfo of the in-process gateway connection.
type gatewayInfo struct {
	credentials.CommonAuthInfo
}

func (gatewayInfo) AuthType() string { return "shoal-rest-gateway" }

// gatewayConn marks the server side of an in-process gateway connection.
type gatewayConn struct{ net.Conn }

// gatewayListener is the in-process listener the gateway dials.
type gatewayListener struct{ *bufconn.Listener }

func newGatewayListener() *gatewayListener {
	return &gatewayListener{Listener: bufconn.Listen(1 << 20)}
}

// Accept marks the connection as the gateway's.
func (l *gatewayListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &gatewayConn{Conn: c}, nil
}

// serverCreds is the gRPC server's TLS, but for the in-process gateway
// connection, which needs none (it never leaves the process).
type serverCreds struct {
	credentials.TransportCredentials
}

func (c serverCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	if _, ok := conn.(*gatewayConn); ok {
		return conn, gatewayInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}, nil
	}
	return c.TransportCredentials.ServerHandshake(conn)
}

func (c serverCreds) Clone() credentials.TransportCredentials {
	return serverCreds{TransportCredentials: c.TransportCredentials.Clone()}
}

// gatewayCertificate is the client certificate the REST caller's TLS
// session verified, as the gateway handed it on; nil when there is none
// or it does not parse (the call then needs a bearer token).
func gatewayCertificate(ctx context.Context) *x509.Certificate {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return nil
	}
	v := md.Get(rest.PeerCertificateMetadata)
	if len(v) != 1 {
		return nil
	}
	cert, err := x509.ParseCertificate([]byte(v[0]))
	if err != nil {
		return nil
	}
	return cert
}

// restTLS is the gRPC TLS configuration for HTTP/1.1 and HTTP/2 clients.
func restTLS(grpcTLS *tls.Config) *tls.Config {
	protos := []string{"h2", "http/1.1"}
	c := grpcTLS.Clone()
	c.NextProtos = protos
	if get := grpcTLS.GetConfigForClient; get != nil {
		c.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			cc, err := get(h)
			if cc != nil {
				cc = cc.Clone()
				cc.NextProtos = protos
			}
			return cc, err
		}
	}
	return c
}

// newGateway dials the server's in-process listener and builds the REST
// handler over it, with cfg.RESTHandlers added.
func (s *Server) newGateway(ctx context.Context) (http.Handler, error) {
	conn, err := grpc.NewClient("passthrough:///shoal-rest-gateway",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return s.gwLis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)),
	)
	if err != nil {
		return nil, fmt.Errorf("server: REST gateway connection: %w", err)
	}
	s.gwConn = conn
	mux, err := rest.NewHandler(ctx, conn)
	if err != nil {
		return nil, err
	}
	for pattern, h := range s.cfg.RESTHandlers {
		mux.Handle(pattern, h)
	}
	return mux, nil
}
