// SPDX-License-Identifier: Apache-2.0

package users

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/time/rate"
)

// JWKSRefetchInterval is how often at most a token signed by a key the hub
// does not know makes it fetch the issuer's JWKS again. go-oidc's remote
// key set refetches on every such token, so that anyone who can reach the
// hub could make it hit the issuer once per call; this caps it (keys the
// issuer rotates in are picked up within the interval).
const JWKSRefetchInterval = 10 * time.Second

// maxJWKSBytes bounds the JWKS document read.
const maxJWKSBytes = 1 << 20

// limitedKeySet is an oidc.KeySet over the issuer's JWKS whose refetches
// are rate-limited.
type limitedKeySet struct {
	url     string
	client  *http.Client
	limiter *rate.Limiter

	mu   sync.Mutex // guards keys
	keys []jose.JSONWebKey
}

func newLimitedKeySet(url string, client *http.Client, every time.Duration) *limitedKeySet {
	return &limitedKeySet{url: url, client: client, limiter: rate.NewLimiter(rate.Every(every), 1)}
}

// signingAlgs are the algorithms go-jose parses a token with here; the
// verifier checks the issuer's list besides.
var signingAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512,
	jose.PS256, jose.PS384, jose.PS512, jose.EdDSA}

// VerifySignature verifies raw against the cached keys, fetching the JWKS
// first when none is cached or, at most once per interval, when no cached
// key verifies it.
func (k *limitedKeySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, signingAlgs)
	if err != nil {
		return nil, fmt.Errorf("malformed JWS: %w", err)
	}
	k.mu.Lock()
	keys := k.keys
	k.mu.Unlock()
	if payload, ok := verifyWith(jws, keys); ok {
		return payload, nil
	}
	// The limiter (burst 1) also keeps concurrent callers from fetching at
	// once; the first fetch counts against the interval too.
	if !k.limiter.Allow() && keys != nil {
		return nil, errors.New("no key of the issuer verifies the signature")
	}
	keys, err = k.fetch(ctx)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.keys = keys
	k.mu.Unlock()
	if payload, ok := verifyWith(jws, keys); ok {
		return payload, nil
	}
	return nil, errors.New("no key of the issuer verifies the signature")
}

// verifyWith tries the keys of the token's key ID (every key without one).
func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey) ([]byte, bool) {
	kid := ""
	if len(jws.Signatures) > 0 {
		kid = jws.Signatures[0].Header.KeyID
	}
	for i := range keys {
		if kid != "" && keys[i].KeyID != kid {
			continue
		}
		if payload, err := jws.Verify(&keys[i]); err == nil {
			return payload, true
		}
	}
	return nil, false
}

// fetch GETs the JWKS.
func (k *limitedKeySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch the issuer's keys: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch the issuer's keys: %s from %s", resp.Status, k.url)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJWKSBytes)).Decode(&set); err != nil {
		return nil, fmt.Errorf("decode the issuer's keys: %w", err)
	}
	return set.Keys, nil
}
