// SPDX-License-Identifier: Apache-2.0

package cahash

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

func selfSigned(t *testing.T) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseAndMatches(t *testing.T) {
	ca, other := selfSigned(t), selfSigned(t)
	h := Of(ca)
	tests := []struct {
		name, in     string
		err, matches bool
	}{
		{"exact", h, false, true},
		{"upper case and spaces", "  " + strings.ToUpper(h) + " ", false, true},
		{"another CA", Of(other), false, false},
		{"no prefix", strings.TrimPrefix(h, Prefix), true, false},
		{"short", h[:len(h)-2], true, false},
		{"not hex", Prefix + strings.Repeat("zz", 32), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.in)
			if (err != nil) != tt.err || (err != nil && !errors.Is(err, ErrMalformed)) {
				t.Errorf("Parse(%q) error = %v, want error %v", tt.in, err, tt.err)
			}
			if got := Matches(ca, tt.in); got != tt.matches {
				t.Errorf("Matches(%q) = %v, want %v", tt.in, got, tt.matches)
			}
		})
	}
}
