// SPDX-License-Identifier: Apache-2.0

package hub

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestExposedEndpointsRefusedAtStart: shoal-hub refuses to start with
// /metrics in plain HTTP off loopback, or with a plain http:// etcd,
// naming the flags that fix it; --etcd-insecure-allow-plaintext gets past
// the check with a warning.
func TestExposedEndpointsRefusedAtStart(t *testing.T) {
	run := func(args ...string) (string, error) {
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, "shoal-hub"), append([]string{"--data-dir", filepath.Join(dir, "data"),
			"--listen", freeAddr(t), "--admin-config", ""}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--http-listen", "0.0.0.0:" + port(freeAddr(t))}, "--http-client-ca"},
		{[]string{"--http-listen", ":" + port(freeAddr(t)), "--http-tls-cert", "c.pem", "--http-tls-key", "k.pem"}, "go together"},
		{[]string{"--http-listen", "", "--etcd-endpoints", "http://127.0.0.1:1"}, "--etcd-insecure-allow-plaintext"},
	} {
		out, err := run(tt.args...)
		if err == nil || !strings.Contains(out, tt.want) {
			t.Errorf("shoal-hub %v: %v, want a refusal naming %s:\n%s", tt.args, err, tt.want, out)
		}
	}
	// Allowed knowingly: the hub gets past the flags and warns (then fails
	// to reach the absent etcd, or times out).
	out, _ := run("--http-listen", "", "--etcd-endpoints", "http://127.0.0.1:1", "--etcd-insecure-allow-plaintext")
	if !strings.Contains(out, "WARNING: external etcd over plain http") {
		t.Errorf("--etcd-insecure-allow-plaintext logs no warning:\n%s", out)
	}
}

func port(addr string) string { return addr[strings.LastIndex(addr, ":")+1:] }

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHealthOnlyListener: --health-listen serves /healthz and /readyz and
// nothing else; /metrics stays on --http-listen.
func TestHealthOnlyListener(t *testing.T) {
	health := freeAddr(t)
	h := startHub(t, "--health-listen", health)
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 404} {
		if code, body := get(t, "http://"+health+path); code != want {
			t.Errorf("health listener %s: %d %q, want %d", path, code, body, want)
		}
	}
	if code, body := get(t, "http://"+h.httpAddr+"/metrics"); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Errorf("--http-listen /metrics: %d", code)
	}
}

// TestRegisterRateLimited: past its burst a source gets ResourceExhausted,
// whether its token is bad or good, before the token is looked at.
func TestRegisterRateLimited(t *testing.T) {
	h := startHub(t, "--register-burst", "3", "--register-rate", "0.001")
	ctx := testCtx(t)
	good := createToken(t, ctx, h.admin(t), 600, 1)
	for i := range 3 {
		if _, err := register(t, ctx, h, "abcdef.0123456789abcdef", "rl", "uid-rl"); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("bad token %d within the burst: %v, want Unauthenticated", i, err)
		}
	}
	for _, tok := range []string{"abcdef.0123456789abcdef", good.Token} {
		if _, err := register(t, ctx, h, tok, "rl", "uid-rl"); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("Register past the burst: %v, want ResourceExhausted", err)
		}
	}
	if m := h.metrics(t); !strings.Contains(m, `shoal_hub_grpc_requests_total{code="ResourceExhausted",method="Clusters/Register"} 2`) {
		t.Errorf("/metrics does not count the 2 refusals:\n%s", grepLines(m, "Clusters/Register"))
	}
}

// TestJoinTokenNotLogged: at the highest verbosity, neither a successful
// registration nor refused ones (wrong secret) put a token's secret in
// the hub's log.
func TestJoinTokenNotLogged(t *testing.T) {
	h := startHub(t, "-v=10")
	ctx := testCtx(t)
	tok := createToken(t, ctx, h.admin(t), 600, 1)
	id, secret, _ := strings.Cut(tok.Token, ".")
	wrong := id + ".zzzzzzzzzzzzzzzz"
	if _, err := register(t, ctx, h, wrong, "quiet", "uid-quiet"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("wrong secret: %v", err)
	}
	if _, err := register(t, ctx, h, tok.Token, "quiet", "uid-quiet"); err != nil {
		t.Fatal(err)
	}
	h.stop() // flush the log
	log := h.log.String()
	if !strings.Contains(log, "Cluster registered") {
		t.Fatalf("the hub's log lacks the registration, so the check below proves nothing:\n%s", log)
	}
	for _, s := range []string{secret, "zzzzzzzzzzzzzzzz"} {
		if strings.Contains(log, s) {
			t.Errorf("the hub's log holds a join token secret %q:\n%s", s, grepLines(log, s))
		}
	}
}

func grepLines(text, s string) string {
	var b bytes.Buffer
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
