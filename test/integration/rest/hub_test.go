// SPDX-License-Identifier: Apache-2.0

package rest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/coreos/go-oidc/v3/oidc/oidctest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	"github.com/shoal-dev/shoal/internal/freeport"
)

// hubProc is a running shoal-hub with its REST face on.
type hubProc struct {
	t                          *testing.T
	dir, configPath, auditPath string
	addr, httpAddr, restAddr   string
	cmd                        *exec.Cmd
	exited                     chan struct{}
	log                        *bytes.Buffer
	extra                      []string
}

func freeAddr(t *testing.T) string {
	t.Helper()
	a, err := freeport.Addr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// startHub runs shoal-hub with --rest-listen and an audit log, and waits
// until /readyz answers.
func startHub(t *testing.T, extra ...string) *hubProc {
	t.Helper()
	dir := t.TempDir()
	h := &hubProc{t: t, dir: dir, configPath: filepath.Join(dir, "config"), auditPath: filepath.Join(dir, "audit.log"), extra: extra}
	// A port freeAddr found may be taken by another process before the
	// hub binds it: then again on other ports.
	for try := 1; ; try++ {
		h.addr, h.httpAddr, h.restAddr = freeAddr(t), freeAddr(t), freeAddr(t)
		if h.start(try < 3) {
			break
		}
	}
	t.Cleanup(h.stop)
	return h
}

// start (re)starts the process on the same addresses and data directory;
// with retryBind, a bind failure returns false instead of failing the test.
func (h *hubProc) start(retryBind ...bool) bool {
	t := h.t
	t.Helper()
	args := append([]string{"--data-dir", filepath.Join(h.dir, "data"), "--listen", h.addr, "--http-listen", h.httpAddr,
		"--rest-listen", h.restAddr, "--admin-config", h.configPath, "--audit-log", h.auditPath}, h.extra...)
	h.log = &bytes.Buffer{}
	h.cmd = exec.Command(filepath.Join(binDir, "shoal-hub"), args...)
	h.cmd.Stdout, h.cmd.Stderr = h.log, h.log
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.exited = make(chan struct{})
	go func() { _ = h.cmd.Wait(); close(h.exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get("http://" + h.httpAddr + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		select {
		case <-h.exited:
			if len(retryBind) > 0 && retryBind[0] && strings.Contains(h.log.String(), "address already in use") {
				h.cmd = nil
				return false
			}
			t.Fatalf("shoal-hub exited during start:\n%s", h.log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("shoal-hub not ready after 60s:\n%s", h.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for a clean exit (open watches included).
func (h *hubProc) stop() {
	if h.cmd == nil {
		return
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
		if code := h.cmd.ProcessState.ExitCode(); code != 0 {
			h.t.Errorf("shoal-hub exited with %d after SIGTERM:\n%s", code, h.log)
		}
	case <-time.After(30 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.exited
		h.t.Errorf("shoal-hub did not stop within 30s of SIGTERM:\n%s", h.log)
	}
	h.cmd = nil
}

// context is the first context of a shoal CLI config file.
func loadContext(t *testing.T, path string) *configv1alpha1.Context {
	t.Helper()
	cfg, err := configv1alpha1.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfg.Context("")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tlsConfig is the TLS client configuration of a context; without its
// certificate when anonymous.
func tlsConfig(t *testing.T, c *configv1alpha1.Context, anonymous bool) *tls.Config {
	t.Helper()
	cc := *c
	if anonymous {
		cc.CertData, cc.KeyData, cc.KeyFile = "", "", ""
	}
	cfg, err := cc.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// grpcConn dials the hub's gRPC listener with cfg (and a bearer token).
func (h *hubProc) grpcConn(t *testing.T, cfg *tls.Config, token string) *grpc.ClientConn {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg))}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(token)))
	}
	conn, err := grpc.NewClient(h.addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// bearer is a per-call bearer token for gRPC.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearer) RequireTransportSecurity() bool { return true }

// restClient calls the REST face over TLS with cfg, sending token as a
// bearer token when set.
type restClient struct {
	base  string
	hc    *http.Client
	token string
}

func (h *hubProc) rest(cfg *tls.Config, token string) *restClient {
	return &restClient{base: "https://" + h.restAddr, token: token,
		hc: &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}}
}

// do makes one call and returns the status and the body.
func (c *restClient) do(t *testing.T, method, path string, body any, header ...string) (int, []byte) {
	t.Helper()
	resp := c.open(t, method, path, body, header...)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (c *restClient) open(t *testing.T, method, path string, body any, header ...string) *http.Response {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// restError is the gateway's error body.
type restError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// wantError checks a refused call's HTTP status and gRPC code.
func wantError(t *testing.T, what string, status int, body []byte, wantStatus, wantCode int) restError {
	t.Helper()
	var e restError
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("%s: HTTP %d, body %q is not an error: %v", what, status, body, err)
	}
	if status != wantStatus || e.Code != wantCode {
		t.Fatalf("%s: HTTP %d code %d (%s), want HTTP %d code %d", what, status, e.Code, e.Message, wantStatus, wantCode)
	}
	return e
}

// shoal runs the CLI against the hub's admin config.
func (h *hubProc) shoal(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "shoal"), append([]string{"--config", h.configPath}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("shoal %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// oidcIssuer is an in-process OIDC issuer signing RS256 ID tokens.
type oidcIssuer struct {
	url, caFile string
	key         *rsa.PrivateKey
}

func startIssuer(t *testing.T) *oidcIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := &oidctest.Server{PublicKeys: []oidctest.PublicKey{{PublicKey: key.Public(), KeyID: "k1", Algorithm: oidc.RS256}}}
	srv := httptest.NewTLSServer(s)
	t.Cleanup(srv.Close)
	s.SetIssuer(srv.URL)
	caFile := filepath.Join(t.TempDir(), "issuer-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &oidcIssuer{url: srv.URL, caFile: caFile, key: key}
}

// token signs an ID token for sub with audience "shoal", valid for an hour.
func (i *oidcIssuer) token(t *testing.T, sub string) string {
	t.Helper()
	claims := map[string]any{"iss": i.url, "aud": "shoal", "sub": sub, "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return oidctest.SignIDToken(i.key, "k1", oidc.RS256, string(b))
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// writePEMs writes a context's CA, certificate and key to files (for
// curl-like clients: the Python client) and returns their paths.
func writePEMs(t *testing.T, c *configv1alpha1.Context, name string) (ca, cert, key string) {
	t.Helper()
	dir := t.TempDir()
	ca, cert, key = filepath.Join(dir, "ca.pem"), filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	keyData := c.KeyData
	if keyData == "" && c.KeyFile != "" {
		b, err := os.ReadFile(c.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		keyData = string(b)
	}
	for p, data := range map[string]string{ca: c.CAData, cert: c.CertData, key: keyData} {
		if !strings.Contains(data, "-----BEGIN") {
			t.Fatalf("context %s lacks PEM data for %s", c.Name, filepath.Base(p))
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return ca, cert, key
}
