package pki

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// CAHashPrefix starts every CA hash.
const CAHashPrefix = "sha256:"

// ErrBadCAHash means a CA hash that is not sha256:<64 hex digits>.
var ErrBadCAHash = errors.New("pki: CA hash must be sha256:<64 hex digits>")

// CAHash returns sha256:<hex> of the certificate's SubjectPublicKeyInfo.
func CAHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return CAHashPrefix + hex.EncodeToString(sum[:])
}

// ParseCAHash checks and normalises (lower-cases) a CA hash.
func ParseCAHash(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	hexPart, ok := strings.CutPrefix(s, CAHashPrefix)
	if !ok || len(hexPart) != 2*sha256.Size {
		return "", fmt.Errorf("%w: %q", ErrBadCAHash, s)
	}
	if _, err := hex.DecodeString(hexPart); err != nil {
		return "", fmt.Errorf("%w: %q", ErrBadCAHash, s)
	}
	return s, nil
}

// MatchesCAHash reports whether cert's public key has the given hash.
func MatchesCAHash(cert *x509.Certificate, hash string) bool {
	h, err := ParseCAHash(hash)
	return err == nil && h == CAHash(cert)
}
