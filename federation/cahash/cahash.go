// SPDX-License-Identifier: Apache-2.0

// Package cahash is the hub CA pin shared by hub and agent: sha256:<hex> of
// the CA certificate's DER SubjectPublicKeyInfo, as kubeadm prints it.
// `shoal cluster token create` prints it and `shoal-agent --ca-hash` checks it.
package cahash

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Prefix starts every CA hash.
const Prefix = "sha256:"

// ErrMalformed means a CA hash that is not sha256:<64 hex digits>.
var ErrMalformed = errors.New("CA hash must be sha256:<64 hex digits>")

// Of returns sha256:<hex> of the certificate's SubjectPublicKeyInfo.
func Of(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return Prefix + hex.EncodeToString(sum[:])
}

// Parse checks and normalises (lower-cases) a CA hash.
func Parse(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	hexPart, ok := strings.CutPrefix(s, Prefix)
	if !ok || len(hexPart) != 2*sha256.Size {
		return "", fmt.Errorf("%w: %q", ErrMalformed, s)
	}
	if _, err := hex.DecodeString(hexPart); err != nil {
		return "", fmt.Errorf("%w: %q", ErrMalformed, s)
	}
	return s, nil
}

// Matches reports whether cert's public key has the given hash.
func Matches(cert *x509.Certificate, hash string) bool {
	h, err := Parse(hash)
	return err == nil && h == Of(cert)
}
