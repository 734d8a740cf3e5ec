// SPDX-License-Identifier: Apache-2.0

package pki

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KeySize is the length of the key that seals the shared PKI: AES-256.
const KeySize = 32

// ErrBadKey means a sealing key of the wrong size or encoding.
var ErrBadKey = errors.New("pki: the PKI encryption key must be 32 bytes, base64-encoded")

// ErrUnseal means a stored file that the key does not open: another key,
// or a record that was tampered with.
var ErrUnseal = errors.New("pki: the shared CA in the store does not open with this encryption key")

// LoadKeyFile reads the key that seals the shared PKI: a file holding 32
// random bytes in standard base64 (`head -c 32 /dev/urandom | base64`),
// surrounding white space ignored — what a Kubernetes Secret mounted as a
// file gives.
func LoadKeyFile(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pki: encryption key: %w", err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("%w (%s)", ErrBadKey, path)
	}
	return key, nil
}

// sealer seals the files of the shared PKI with AES-256-GCM; each file's
// name is its additional data, so a sealed file cannot be passed off as
// another (a certificate as a key).
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	if len(key) != KeySize {
		return nil, ErrBadKey
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

// seal returns a random nonce followed by the ciphertext of data.
func (s *sealer) seal(name string, data []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, data, []byte("shoal-pki/"+name)), nil
}

// open reverses seal; ErrUnseal when the key or the name do not match.
func (s *sealer) open(name string, sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, fmt.Errorf("%w: %s is too short", ErrUnseal, name)
	}
	data, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte("shoal-pki/"+name))
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrUnseal, name)
	}
	return data, nil
}
