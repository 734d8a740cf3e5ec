// SPDX-License-Identifier: Apache-2.0

package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
)

// TestBodyLimitAndRefusalsBeforeTheCall: a body over MaxBodyBytes and a
// body with an unknown field are refused (400, InvalidArgument) before
// any gRPC call (the connection here leads nowhere); unknown paths are
// 404; /openapi.json is served.
func TestBodyLimitAndRefusalsBeforeTheCall(t *testing.T) {
	h := nowhereHandler(t)
	big := `{"job": {"json": {"x": "` + strings.Repeat("a", MaxBodyBytes) + `"}}}`
	for _, tt := range []struct {
		name, method, path, body string
		status                   int
		code                     codes.Code
		msg                      string
	}{
		{"too large", http.MethodPost, "/v1/jobs", big, http.StatusBadRequest, codes.InvalidArgument, "request body too large"},
		{"unknown field", http.MethodPost, "/v1/jobs", `{"jobb": {}}`, http.StatusBadRequest, codes.InvalidArgument, `unknown field "jobb"`},
		{"unknown path", http.MethodGet, "/v1/nothing", "", http.StatusNotFound, codes.NotFound, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, bytes.NewBufferString(tt.body)))
			var e struct {
				Code    int
				Message string
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != tt.status || e.Code != int(tt.code) ||
				!strings.Contains(e.Message, tt.msg) {
				t.Fatalf("HTTP %d %s, want %d code %d %q", rec.Code, rec.Body.String(), tt.status, tt.code, tt.msg)
			}
		})
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), OpenAPI) {
		t.Fatalf("GET /openapi.json: HTTP %d", rec.Code)
	}
}

// TestEveryDocumentedPathIsRouted: every path and method of the OpenAPI
// document the face serves reaches a gRPC call (here Unavailable: the
// connection leads nowhere), none is refused as an unknown path — a
// service whose handler is not registered answers 404 to every caller.
func TestEveryDocumentedPathIsRouted(t *testing.T) {
	h := nowhereHandler(t)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	n := 0
	for path, methods := range doc.Paths {
		for method := range methods {
			if method == "parameters" {
				continue
			}
			n++
			url := param.ReplaceAllString(path, "x")
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			req := httptest.NewRequest(strings.ToUpper(method), url, bytes.NewBufferString("{}")).WithContext(ctx)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			cancel()
			if rec.Code == http.StatusNotFound || rec.Code == http.StatusNotImplemented || rec.Code == http.StatusMethodNotAllowed {
				t.Errorf("%s %s: HTTP %d %s, want it routed to the API", strings.ToUpper(method), url, rec.Code, rec.Body.String())
			}
		}
	}
	if n < 30 {
		t.Fatalf("only %d operations in the OpenAPI document", n)
	}
}

// nowhereHandler is the REST face over a connection that leads nowhere:
// every call that reaches the gRPC client fails Unavailable.
func nowhereHandler(t *testing.T) http.Handler {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///nowhere", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	h, err := NewHandler(t.Context(), conn)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
