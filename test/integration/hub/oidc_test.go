// SPDX-License-Identifier: Apache-2.0

package hub

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/coreos/go-oidc/v3/oidc/oidctest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/hub/audit"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// oidcIssuer is an in-process OIDC issuer: an httptest TLS server serving
// /.well-known/openid-configuration and its JWKS, signing RS256 ID tokens.
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

// token signs an ID token for sub with audience "shoal", valid for an hour,
// after applying the changes to its claims.
func (i *oidcIssuer) token(t *testing.T, sub string, change func(map[string]any)) string {
	t.Helper()
	return i.tokenBy(t, i.key, sub, change)
}

func (i *oidcIssuer) tokenBy(t *testing.T, key *rsa.PrivateKey, sub string, change func(map[string]any)) string {
	t.Helper()
	claims := map[string]any{"iss": i.url, "aud": "shoal", "sub": sub, "exp": time.Now().Add(time.Hour).Unix(),
		"iat": time.Now().Unix()}
	if change != nil {
		change(claims)
	}
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return oidctest.SignIDToken(key, "k1", oidc.RS256, string(b))
}

// bearer is a per-call bearer token.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearer) RequireTransportSecurity() bool { return true }

// tokenClient dials the hub over server-authenticated TLS (no client
// certificate) and sends tok on every call.
func (h *hubProc) tokenClient(t *testing.T, tok string) *client {
	t.Helper()
	cfg, err := configv1alpha1.Load(h.configPath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfg.Context("")
	if err != nil {
		t.Fatal(err)
	}
	anon := configv1alpha1.Context{Name: "token", CAData: c.CAData}
	tlsCfg, err := anon.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)),
		grpc.WithPerRPCCredentials(bearer(tok)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &client{jobs: shoalv1.NewJobsClient(conn), queues: shoalv1.NewQueuesClient(conn), users: shoalv1.NewUsersClient(conn)}
}

// wantMessage checks err's code and that its message holds msg.
func wantMessage(t *testing.T, err error, code codes.Code, msg, what string) {
	t.Helper()
	wantCode(t, err, code, what)
	if m := status.Convert(err).Message(); !strings.Contains(m, msg) {
		t.Errorf("%s: message %q lacks %q", what, m, msg)
	}
}

// TestOIDCUsers runs OIDC ID tokens against a real hub and an in-process
// issuer: a token of a bound username has its user's rights and is that
// user (job owner, whoami, audit log); a token of a group binding has the
// group's; wrong audience, wrong issuer, bad signature and expired tokens
// are Unauthenticated, an unbound identity and a revoked user
// PermissionDenied at the next call; the CLI sends the token from
// --token-file, $SHOAL_TOKEN or the context's tokenFile.
func TestOIDCUsers(t *testing.T) {
	iss := startIssuer(t)
	auditPath := filepath.Join(t.TempDir(), "audit.log")
	h := startHub(t, "-v=10", "--audit-log", auditPath, "--oidc-issuer-url", iss.url, "--oidc-client-id", "shoal",
		"--oidc-ca-file", iss.caFile, "--oidc-groups-claim", "groups", "--oidc-username-prefix", "corp:")
	ctx := testCtx(t)
	dir := t.TempDir()
	for _, q := range []string{"a/b", "a/c"} {
		if out, err := h.shoal(t, "queue", "create", q); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	daveConfig := filepath.Join(dir, "dave.yaml")
	if out, err := h.shoal(t, "user", "create", "dave", "--oidc-username", "corp:dave-sub", "--role", "submitter", "--queue", "a/b",
		"--out", daveConfig, "--oidc-token-file", "dave.token"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := h.shoal(t, "user", "create", "ml-team", "--oidc-group", "ml", "--role", "viewer", "--queue", "a"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cfg, err := configv1alpha1.Load(daveConfig)
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.Contexts[0]; c.CertData != "" || c.KeyData != "" || c.TokenFile != "dave.token" {
		t.Fatalf("dave's context holds a certificate or no token file: %+v", c)
	}

	// A valid token has dave's rights and is dave.
	daveTok := iss.token(t, "dave-sub", nil)
	dave := h.tokenClient(t, daveTok)
	o, err := dave.jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: jobObject(t, testjob.New("dave-job").Queue("a/b").Obj())})
	if err != nil {
		t.Fatalf("dave submits to a/b: %v", err)
	}
	if got := decodeJob(t, o).Status.Owner; got != "dave" {
		t.Fatalf("owner = %q, want dave", got)
	}
	_, err = dave.jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: jobObject(t, testjob.New("dave-c").Queue("a/c").Obj())})
	wantCode(t, err, codes.PermissionDenied, "dave submits to a/c")
	who, err := dave.users.WhoAmI(ctx, &shoalv1.WhoAmIRequest{})
	if err != nil || who.User != "dave" || who.Method != "oidc" || who.OidcUsername != "corp:dave-sub" || len(who.Bindings) != 1 {
		t.Fatalf("dave whoami: %+v, %v", who, err)
	}

	// The CLI: the context's tokenFile, --token-file, $SHOAL_TOKEN.
	if err := os.WriteFile(filepath.Join(dir, "dave.token"), []byte(daveTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := shoalAs(t, daveConfig, "auth", "whoami"); code != 0 || !strings.Contains(out, "dave") || !strings.Contains(out, "oidc") ||
		!strings.Contains(out, "submitter@a/b") || strings.Contains(out, daveTok) {
		t.Errorf("whoami with the context's token file: exit %d\n%s", code, out)
	}
	erinTok := iss.token(t, "erin-sub", func(c map[string]any) { c["groups"] = []string{"ml", "other"} })
	erinFile := filepath.Join(dir, "erin.token")
	if err := os.WriteFile(erinFile, []byte(erinTok), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := shoalAs(t, daveConfig, "--token-file", erinFile, "auth", "whoami"); code != 0 || !strings.Contains(out, "oidc:corp:erin-sub") ||
		!strings.Contains(out, "ml-team") {
		t.Errorf("whoami with --token-file: exit %d\n%s", code, out)
	}
	expiredFile := filepath.Join(dir, "expired.token")
	if err := os.WriteFile(expiredFile, []byte(iss.token(t, "dave-sub", func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() })), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := shoalAs(t, daveConfig, "--token-file", expiredFile, "job", "list"); code == 0 ||
		!strings.Contains(out, "refused the ID token") || !strings.Contains(out, "token expired at") {
		t.Errorf("the CLI with an expired token: exit %d\n%s", code, out)
	}
	env := exec.Command(filepath.Join(binDir, "shoal"), "--config", h.configPath, "auth", "can-i", "create", "jobs", "--queue", "a/b")
	env.Env = append(os.Environ(), "HOME="+t.TempDir(), configv1alpha1.TokenEnv+"="+erinTok)
	if out, err := env.CombinedOutput(); err == nil || !strings.HasPrefix(string(out), "no") {
		t.Errorf("$SHOAL_TOKEN of a viewer overrides the admin context: can-i create jobs = %v\n%s", err, out)
	}

	// A group binding: erin is no user, the group ml views a.
	erin := h.tokenClient(t, erinTok)
	if list, err := erin.jobs.List(ctx, &shoalv1.ListJobsRequest{}); err != nil || len(list.Items) != 1 {
		t.Fatalf("erin (group ml) lists jobs: %v (%d items, want dave-job)", err, len(list.GetItems()))
	}
	_, err = erin.jobs.Cancel(ctx, &shoalv1.CancelJobRequest{Name: "dave-job"})
	wantCode(t, err, codes.PermissionDenied, "erin (viewer by group) cancels")

	// Refused tokens.
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, tok, msg string
		code           codes.Code
	}{
		{"wrong audience", iss.token(t, "dave-sub", func(c map[string]any) { c["aud"] = "kubernetes" }), "audience", codes.Unauthenticated},
		{"wrong issuer", iss.token(t, "dave-sub", func(c map[string]any) { c["iss"] = "https://evil.example.com" }), "issued by a different provider", codes.Unauthenticated},
		{"bad signature", iss.tokenBy(t, other, "dave-sub", nil), "signature", codes.Unauthenticated},
		{"expired", iss.token(t, "dave-sub", func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() }), "token expired", codes.Unauthenticated},
		{"unknown subject", iss.token(t, "mallory-sub", nil), `"corp:mallory-sub" is not bound`, codes.PermissionDenied},
	} {
		_, err := h.tokenClient(t, tt.tok).jobs.Get(ctx, &shoalv1.GetJobRequest{Name: "dave-job"})
		wantMessage(t, err, tt.code, tt.msg, tt.name)
	}
	_, err = dave.users.RenewCertificate(ctx, &shoalv1.RenewUserCertificateRequest{})
	wantMessage(t, err, codes.PermissionDenied, "current client certificate", "dave renews by token")

	// Revocation refuses the same token at the next call.
	if _, err := dave.jobs.Get(ctx, &shoalv1.GetJobRequest{Name: "dave-job"}); err != nil {
		t.Fatalf("dave reads his job: %v", err)
	}
	if out, err := h.shoal(t, "user", "revoke", "dave"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	_, err = dave.jobs.Get(ctx, &shoalv1.GetJobRequest{Name: "dave-job"})
	wantMessage(t, err, codes.PermissionDenied, "revoked", "revoked dave reads his job")
	if out, err := h.shoal(t, "user", "list"); err != nil || !strings.Contains(out, "group:ml") || !strings.Contains(out, "corp:dave-sub") {
		t.Errorf("user list shows no OIDC bindings: %v\n%s", err, out)
	}

	// The audit log names the OIDC user and how it authenticated.
	var oidcEntries []audit.Entry
	for _, e := range readAudit(t, auditPath) {
		if e.Auth == "oidc" {
			oidcEntries = append(oidcEntries, e)
		}
	}
	want := []audit.Entry{
		{User: "dave", Auth: "oidc", OIDCUsername: "corp:dave-sub", Method: "Jobs/Submit", Object: "dave-job", Queue: "a/b", Code: "OK"},
		{User: "dave", Auth: "oidc", OIDCUsername: "corp:dave-sub", Method: "Jobs/Submit", Object: "dave-c", Queue: "a/c", Code: "PermissionDenied"},
		{User: "oidc:corp:erin-sub", Auth: "oidc", OIDCUsername: "corp:erin-sub", Method: "Jobs/Cancel", Object: "dave-job", Queue: "a/b", Code: "PermissionDenied"},
		{User: "dave", Auth: "oidc", OIDCUsername: "corp:dave-sub", Method: "Users/RenewCertificate", Object: "dave", Code: "PermissionDenied"},
	}
	if len(oidcEntries) != len(want) {
		t.Fatalf("audit log has %d OIDC lines, want %d: %+v", len(oidcEntries), len(want), oidcEntries)
	}
	for i := range want {
		if oidcEntries[i] != want[i] {
			t.Errorf("OIDC audit line %d = %+v, want %+v", i, oidcEntries[i], want[i])
		}
	}

	// No token reaches the hub's log (at -v=10) or the audit log.
	h.stop() // flush the log
	log := h.log.String()
	if !strings.Contains(log, "Hub serving") || !strings.Contains(log, "Hub stopped") {
		t.Fatalf("the hub's log was not captured whole, so the check below proves nothing:\n%s", log)
	}
	auditBytes, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	// The signature (third part) is what makes a token usable.
	for _, tok := range []string{daveTok, erinTok} {
		sig := tok[strings.LastIndex(tok, ".")+1:]
		if strings.Contains(log, sig) || strings.Contains(string(auditBytes), sig) {
			t.Errorf("a token's signature is in the hub's log or the audit log:\n%s", grepLines(log, sig))
		}
	}
}

// TestHubWithoutIssuerRefusesTokens: a hub without --oidc-issuer-url
// answers a bearer token Unauthenticated, saying so, and refuses OIDC
// bindings that would never apply.
func TestHubWithoutIssuerRefusesTokens(t *testing.T) {
	iss := startIssuer(t)
	h := startHub(t)
	_, err := h.tokenClient(t, iss.token(t, "dave-sub", nil)).jobs.List(testCtx(t), &shoalv1.ListJobsRequest{})
	wantMessage(t, err, codes.Unauthenticated, "accepts no bearer tokens", "token to a hub without an issuer")
	for _, flag := range []string{"--oidc-username", "--oidc-group"} {
		out, err := h.shoal(t, "user", "create", "dave", flag, "x", "--role", "admin")
		if err == nil || !strings.Contains(out, "--oidc-issuer-url") {
			t.Errorf("user create %s on a hub without an issuer: %v\n%s", flag, err, out)
		}
	}
}
