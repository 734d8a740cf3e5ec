// SPDX-License-Identifier: Apache-2.0

package rest

import (
	"context"
	_ "embed"
	"fmt"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	gw "github.com/shoal-dev/shoal/hub/rest/internal/shoalv1alpha1"
)

// PeerCertificateMetadata is the gRPC metadata key (binary) under which
// the gateway hands the hub the DER of the client certificate the REST
// caller's TLS session verified. The hub's gRPC server believes it only
// on the in-process gateway connection (hub/server gateway.go); from any
// other peer it is ignored, and the gateway never forwards a caller's own
// headers as metadata, so no caller can set it.
const PeerCertificateMetadata = "shoal-gateway-peer-certificate-bin"

// OpenAPI is the OpenAPI (Swagger 2.0) document of the REST face, served
// at /openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

// MaxBodyBytes bounds a request body, as the hub's gRPC server bounds a
// message (16 MiB): the gateway reads the body before the call is
// authenticated, so an unbounded one would let anyone fill the memory.
const MaxBodyBytes = 16 << 20

// register lists the services the gateway serves (the HTTP rules of
// rest.yaml say which of their methods).
var register = []func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error{
	gw.RegisterClustersHandler, gw.RegisterJobsHandler, gw.RegisterQueuesHandler,
	gw.RegisterGitOpsHandler, gw.RegisterRolloutsHandler, gw.RegisterUsersHandler, gw.RegisterModelsHandler,
	gw.RegisterInferenceHandler, gw.RegisterPoolsHandler,
}

// NewHandler is the REST face over conn, a connection to the hub's gRPC
// server: /v1/... (rest.yaml) and /openapi.json. ctx bounds nothing but
// the registration. Callers may add handlers to the mux it returns.
func NewHandler(ctx context.Context, conn *grpc.ClientConn) (*http.ServeMux, error) {
	gwmux := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, newObjectMarshaler()),
		// No caller header becomes metadata (the default passes
		// Grpc-Metadata-*); the gateway forwards Authorization (bearer
		// tokens) on its own, and the verified client certificate below.
		runtime.WithIncomingHeaderMatcher(func(string) (string, bool) { return "", false }),
		// Nor does the hub's gRPC metadata become HTTP headers (there is
		// none worth a header; the default writes Grpc-Metadata-*).
		runtime.WithOutgoingHeaderMatcher(func(string) (string, bool) { return "", false }),
		runtime.WithOutgoingTrailerMatcher(func(string) (string, bool) { return "", false }),
		runtime.WithMetadata(peerCertificate),
		runtime.WithForwardResponseOption(startStream),
		runtime.WithErrorHandler(closingAsUnavailable),
	)
	for _, r := range register {
		if err := r(ctx, gwmux, conn); err != nil {
			return nil, fmt.Errorf("rest: %w", err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", limitBody(oneHeaderHandler(gwmux)))
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(OpenAPI)
	})
	return mux, nil
}

// peerCertificate hands on the leaf of the caller's verified client
// certificate chain; a certificate that did not verify is not handed on.
func peerCertificate(_ context.Context, r *http.Request) metadata.MD {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return nil
	}
	return metadata.Pairs(PeerCertificateMetadata, string(r.TLS.VerifiedChains[0][0].Raw))
}

// limitBody refuses bodies over MaxBodyBytes (the decoder's error: 400).
func limitBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		h.ServeHTTP(w, r)
	})
}
