// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// tokenRE is the shape of a join token: <6-char id>.<16-char secret>.
var tokenRE = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)

const tokenAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// DefaultTokenTTL is the lifetime of a token created without one.
const DefaultTokenTTL = 24 * time.Hour

// ParseToken splits a join token into its id and secret.
func ParseToken(token string) (id, secret string, err error) {
	m := tokenRE.FindStringSubmatch(token)
	if m == nil {
		return "", "", fmt.Errorf("%w: malformed token (want <6 chars>.<16 chars> of [a-z0-9])", ErrInvalidToken)
	}
	return m[1], m[2], nil
}

// HashSecret is the hex SHA-256 of a token secret, as stored.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func randomString(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	for i := range b {
		b[i] = tokenAlphabet[int(b[i])%len(tokenAlphabet)]
	}
	return string(b), nil
}

// TokenOptions configure a new join token.
type TokenOptions struct {
	// TTL is the token's lifetime; 0 means DefaultTokenTTL.
	TTL time.Duration
	// Usages is how many registrations it admits; 0 means 1.
	Usages int32
	// Description says what the token is for.
	Description string
}

// CreateToken stores a new join token and returns the token (shown once) and its record.
func (r *Registry) CreateToken(ctx context.Context, opts TokenOptions) (string, *v1alpha1.JoinToken, error) {
	if opts.TTL < 0 || opts.Usages < 0 {
		return "", nil, fmt.Errorf("%w: ttl and usages must not be negative", ErrInvalid)
	}
	if opts.TTL == 0 {
		opts.TTL = DefaultTokenTTL
	}
	if opts.Usages == 0 {
		opts.Usages = 1
	}
	for {
		id, err := randomString(6)
		if err != nil {
			return "", nil, err
		}
		secret, err := randomString(16)
		if err != nil {
			return "", nil, err
		}
		now := r.clock.Now()
		tok := &v1alpha1.JoinToken{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: "JoinToken"},
			ObjectMeta: metav1.ObjectMeta{Name: id, CreationTimestamp: metav1.NewTime(now)},
			Spec: v1alpha1.JoinTokenSpec{
				SecretHash:  HashSecret(secret),
				Expires:     metav1.NewTime(now.Add(opts.TTL)),
				MaxUses:     opts.Usages,
				Description: opts.Description,
			},
		}
		rev, err := r.tokens.Create(ctx, id, tok)
		if errors.Is(err, store.ErrAlreadyExists) {
			continue // 36^6 ids: a collision is rare, just draw again
		}
		if err != nil {
			return "", nil, err
		}
		tok.ResourceVersion = fmt.Sprint(rev)
		return id + "." + secret, tok, nil
	}
}

// ListTokens returns every join token record (secrets are never stored).
func (r *Registry) ListTokens(ctx context.Context) ([]*v1alpha1.JoinToken, error) {
	res, err := r.tokens.List(ctx, store.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*v1alpha1.JoinToken, 0, len(res.Items))
	for _, it := range res.Items {
		it.Object.ResourceVersion = fmt.Sprint(it.Revision)
		out = append(out, it.Object)
	}
	return out, nil
}

// RevokeToken marks a token revoked; a full token is accepted in place of its id.
func (r *Registry) RevokeToken(ctx context.Context, id string) error {
	if tid, _, err := ParseToken(id); err == nil {
		id = tid
	}
	_, _, err := r.tokens.GuaranteedUpdate(ctx, id, func(t *v1alpha1.JoinToken) (*v1alpha1.JoinToken, error) {
		t.Status.Revoked = true
		return t, nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: join token %q", ErrNotFound, id)
	}
	return err
}

// checkToken verifies the token's secret and that it may still be used.
func (r *Registry) checkToken(tok *v1alpha1.JoinToken, id, secret string) error {
	want := []byte(tok.Spec.SecretHash)
	if subtle.ConstantTimeCompare(want, []byte(HashSecret(secret))) != 1 {
		return fmt.Errorf("%w: unknown token %s.…", ErrInvalidToken, id)
	}
	switch {
	case tok.Status.Revoked:
		return fmt.Errorf("%w: token %s was revoked: create a new one with `shoal cluster token create`", ErrInvalidToken, id)
	case !r.clock.Now().Before(tok.Spec.Expires.Time):
		return fmt.Errorf("%w: token %s expired at %s: create a new one with `shoal cluster token create`",
			ErrInvalidToken, id, tok.Spec.Expires.UTC().Format(time.RFC3339))
	case tok.Spec.MaxUses > 0 && tok.Status.Uses >= tok.Spec.MaxUses:
		return fmt.Errorf("%w: token %s was used %d of %d times: create a new one with `shoal cluster token create --usages N`",
			ErrInvalidToken, id, tok.Status.Uses, tok.Spec.MaxUses)
	}
	return nil
}

// TokenRetention is how long an expired join token stays listed.
const TokenRetention = 24 * time.Hour

// PruneTokens deletes the tokens that expired more than TokenRetention ago
// and returns how many it deleted.
func (r *Registry) PruneTokens(ctx context.Context) (int, error) {
	res, err := r.tokens.List(ctx, store.ListOptions{})
	if err != nil {
		return 0, err
	}
	cutoff := r.clock.Now().Add(-TokenRetention)
	n := 0
	for _, it := range res.Items {
		if !it.Object.Spec.Expires.Time.Before(cutoff) {
			continue
		}
		err := r.tokens.Delete(ctx, it.Name, it.Revision)
		if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
			return n, err
		}
		if err == nil {
			n++
		}
	}
	return n, nil
}
