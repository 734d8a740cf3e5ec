// SPDX-License-Identifier: Apache-2.0

package rest

import (
	"context"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// The gateway writes a stream's HTTP status and headers with its first
// message, so a watch with nothing to report yet would leave the client
// waiting for the response itself. startStream, a forward-response option
// the gateway calls once with a nil message when a stream has been
// accepted (the hub's Watch answers its gRPC headers at once), sends the
// 200 and the headers right away; refusals (401, 403, 400) come before
// it with their own status. oneHeader drops the gateway's later
// WriteHeader of the same response (on an error after the start, which
// then travels as an {"error": ...} line).

func startStream(_ context.Context, w http.ResponseWriter, m proto.Message) error {
	if m != nil {
		return nil
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return http.NewResponseController(w).Flush()
}

// oneHeader passes at most one WriteHeader on to the response.
type oneHeader struct {
	http.ResponseWriter
	wrote bool
}

func (w *oneHeader) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *oneHeader) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (Flush).
func (w *oneHeader) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func oneHeaderHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&oneHeader{ResponseWriter: w}, r)
	})
}

// closingAsUnavailable answers a call the gateway could not pass on because
// its connection to the hub's gRPC server is closing (the hub is stopping)
// as Unavailable, which clients retry (another replica, or this one
// restarted), and not as the Canceled (HTTP 499) gRPC reports for it.
// Every other error goes to the default handler unchanged.
func closingAsUnavailable(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if st, ok := status.FromError(err); ok && st.Code() == codes.Canceled && strings.Contains(st.Message(), "client connection is closing") {
		err = status.Error(codes.Unavailable, "the hub is stopping; retry")
	}
	runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, err)
}
