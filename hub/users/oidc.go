// SPDX-License-Identifier: Apache-2.0

package users

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/hub/errs"
)

// ErrUnauthenticated means a bearer token that is not a valid ID token of
// the hub's OIDC issuer (bad signature, another issuer or audience,
// malformed); ErrTokenExpired, an ID token past its expiry.
var (
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrTokenExpired    = fmt.Errorf("token expired: %w", ErrUnauthenticated)
)

// OIDCConfig selects the OIDC issuer whose ID tokens the hub accepts, the
// way kube-apiserver's --oidc-* flags do.
type OIDCConfig struct {
	// IssuerURL is the issuer (https); its discovery document and JWKS are
	// fetched from it. "" accepts no tokens.
	IssuerURL string
	// ClientID must be in a token's audience.
	ClientID string
	// UsernameClaim names the user (default "sub"); with "email", a token
	// whose email_verified is false is refused.
	UsernameClaim string
	// UsernamePrefix is put before the claim's value.
	UsernamePrefix string
	// GroupsClaim holds the user's groups (a string or a list); "" reads none.
	GroupsClaim string
	// GroupsPrefix is put before every group.
	GroupsPrefix string
	// CAFile is a PEM bundle that signed the issuer's serving certificate
	// ("" trusts the system roots).
	CAFile string
}

// DefaultUsernameClaim is the username claim unless configured.
const DefaultUsernameClaim = "sub"

// Validate checks the configuration.
func (c OIDCConfig) Validate() error {
	if c.IssuerURL == "" {
		if c.ClientID != "" || c.CAFile != "" || c.GroupsClaim != "" {
			return errors.New("the OIDC client ID, CA file and groups claim need an issuer URL")
		}
		return nil
	}
	u, err := url.Parse(c.IssuerURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("OIDC issuer URL %q: want https://HOST[/PATH]", c.IssuerURL)
	}
	if c.ClientID == "" {
		return errors.New("the OIDC issuer needs a client ID (tokens are accepted only for that audience)")
	}
	return nil
}

// OIDCIdentity is who a verified ID token names.
type OIDCIdentity struct {
	// Username is the username claim's value with the prefix.
	Username string
	// Groups are the groups claim's values with the prefix.
	Groups []string
	// Expiry is the token's expiry.
	Expiry time.Time
}

// TokenVerifier verifies ID tokens of one issuer with go-oidc: the
// signature against the issuer's JWKS (discovered on first use; fetched
// again for a token no cached key verifies, at most once per
// JWKSRefetchInterval), the issuer, the audience and the expiry.
type TokenVerifier struct {
	cfg    OIDCConfig
	client *http.Client
	clock  clock.PassiveClock

	// refetch is the least time between two JWKS fetches for unknown keys.
	refetch time.Duration

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	keys     *limitedKeySet
	lastTry  time.Time
	lastErr  error
}

// discoveryRetry is how soon a failed discovery is tried again.
const discoveryRetry = 5 * time.Second

// NewTokenVerifier returns a verifier for cfg (discovery happens at the
// first token, so that the hub starts while the issuer is down).
func NewTokenVerifier(cfg OIDCConfig) (*TokenVerifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.UsernameClaim == "" {
		cfg.UsernameClaim = DefaultUsernameClaim
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("OIDC CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("OIDC CA file %s holds no PEM certificate", cfg.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	return &TokenVerifier{cfg: cfg, client: &http.Client{Transport: tr, Timeout: 10 * time.Second},
		clock: clock.RealClock{}, refetch: JWKSRefetchInterval}, nil
}

// WithClock sets the clock the expiry is checked against (tests).
func (v *TokenVerifier) WithClock(c clock.PassiveClock) *TokenVerifier { v.clock = c; return v }

// idVerifier discovers the issuer once (retrying a failure after
// discoveryRetry) and returns the go-oidc verifier.
func (v *TokenVerifier) idVerifier() (*oidc.IDTokenVerifier, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.verifier != nil {
		return v.verifier, nil
	}
	if v.lastErr != nil && v.clock.Since(v.lastTry) < discoveryRetry {
		return nil, v.lastErr
	}
	// The context configures the HTTP client of discovery and of every
	// later JWKS fetch; it must outlive the call.
	ctx := oidc.ClientContext(context.Background(), v.client)
	p, err := oidc.NewProvider(ctx, v.cfg.IssuerURL)
	v.lastTry = v.clock.Now()
	if err != nil {
		v.lastErr = errs.Unavailable("OIDC issuer "+v.cfg.IssuerURL, err)
		return nil, v.lastErr
	}
	var disc struct {
		JWKSURL string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := p.Claims(&disc); err != nil || disc.JWKSURL == "" {
		v.lastErr = errs.Unavailable("OIDC issuer "+v.cfg.IssuerURL, fmt.Errorf("discovery document without jwks_uri (%v)", err))
		return nil, v.lastErr
	}
	v.keys = newLimitedKeySet(disc.JWKSURL, v.client, v.refetch)
	v.verifier = oidc.NewVerifier(v.cfg.IssuerURL, v.keys, &oidc.Config{ClientID: v.cfg.ClientID, Now: v.clock.Now,
		SupportedSigningAlgs: disc.Algs})
	v.lastErr = nil
	return v.verifier, nil
}

// Verify checks raw and returns its identity. An expired token is
// ErrTokenExpired, any other bad token ErrUnauthenticated; an issuer that
// cannot be reached is errs.ErrUnavailable.
func (v *TokenVerifier) Verify(ctx context.Context, raw string) (OIDCIdentity, error) {
	iv, err := v.idVerifier()
	if err != nil {
		return OIDCIdentity{}, err
	}
	tok, err := iv.Verify(oidc.ClientContext(ctx, v.client), raw)
	var expired *oidc.TokenExpiredError
	switch {
	case errors.As(err, &expired):
		return OIDCIdentity{}, errs.Of(ErrTokenExpired, "token expired at %s; get a new ID token from %s",
			expired.Expiry.UTC().Format(time.RFC3339), v.cfg.IssuerURL)
	case err != nil:
		return OIDCIdentity{}, errs.Of(ErrUnauthenticated, "invalid ID token: %s", strings.TrimPrefix(err.Error(), "oidc: "))
	}
	var claims map[string]json.RawMessage
	if err := tok.Claims(&claims); err != nil {
		return OIDCIdentity{}, errs.Of(ErrUnauthenticated, "invalid ID token claims: %v", err)
	}
	id := OIDCIdentity{Expiry: tok.Expiry}
	var name string
	if err := json.Unmarshal(claims[v.cfg.UsernameClaim], &name); err != nil || name == "" {
		return OIDCIdentity{}, errs.Of(ErrUnauthenticated, "ID token has no string claim %q (--oidc-username-claim)", v.cfg.UsernameClaim)
	}
	if v.cfg.UsernameClaim == "email" {
		if raw, ok := claims["email_verified"]; ok {
			var verified bool
			if err := json.Unmarshal(raw, &verified); err != nil || !verified {
				return OIDCIdentity{}, errs.Of(ErrUnauthenticated, "ID token's email %q is not verified (email_verified)", name)
			}
		}
	}
	id.Username = v.cfg.UsernamePrefix + name
	if v.cfg.GroupsClaim != "" {
		groups, err := stringOrList(claims[v.cfg.GroupsClaim])
		if err != nil {
			return OIDCIdentity{}, errs.Of(ErrUnauthenticated, "ID token claim %q (--oidc-groups-claim): %v", v.cfg.GroupsClaim, err)
		}
		for _, g := range groups {
			id.Groups = append(id.Groups, v.cfg.GroupsPrefix+g)
		}
	}
	return id, nil
}

// stringOrList decodes a claim that is a string or a list of strings
// (absent: none).
func stringOrList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New("neither a string nor a list of strings")
	}
	return list, nil
}
