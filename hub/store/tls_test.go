// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoal-dev/shoal/hub/store"
)

func TestClientTLSRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		ca, cert, key string
	}{
		{"missing CA file", filepath.Join(dir, "missing.pem"), "", ""},
		{"CA without certificates", notPEM, "", ""},
		{"certificate without key", "", notPEM, ""},
		{"key without certificate", "", "", notPEM},
		{"unparsable key pair", "", notPEM, notPEM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := store.ClientTLS(tt.ca, tt.cert, tt.key); err == nil {
				t.Fatal("ClientTLS accepted bad input")
			}
		})
	}
	if cfg, err := store.ClientTLS("", "", ""); err != nil || cfg.RootCAs != nil || len(cfg.Certificates) != 0 {
		t.Fatalf("empty ClientTLS = %+v, %v; want system roots, no certificate", cfg, err)
	}
}
