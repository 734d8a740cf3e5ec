// SPDX-License-Identifier: Apache-2.0

package pki

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Files of a CA rotation's overlap, beside ca.crt and ca.key.
const (
	previousCertFile = "previous-ca.crt"
	previousKeyFile  = "previous-ca.key"
	// rotationFile records the end of the overlap.
	rotationFile = "rotation.json"
)

// DefaultRotationOverlap is how long, after `shoal-hub rotate-ca`, the
// previous CA stays trusted unless --overlap says otherwise.
const DefaultRotationOverlap = 7 * 24 * time.Hour

// ErrRotationInProgress means a CA rotation whose overlap has not ended.
var ErrRotationInProgress = errors.New("pki: a CA rotation is in progress")

// Rotation describes a CA rotation's overlap.
type Rotation struct {
	// Previous is the CA before the current one.
	Previous *x509.Certificate `json:"-"`
	// Until is the end of the overlap: from then on certificates of
	// Previous are refused and the hub serves a certificate of the
	// current CA.
	Until time.Time `json:"until"`
}

// previousCA is the CA before the current one, trusted until until.
type previousCA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
	until   time.Time
}

// loadRotation reads the overlap files, when there are.
func (ca *CA) loadRotation() error {
	raw, err := os.ReadFile(filepath.Join(ca.dir, rotationFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	var r Rotation
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("pki: %s: %w", filepath.Join(ca.dir, rotationFile), err)
	}
	certPEM, err := os.ReadFile(filepath.Join(ca.dir, previousCertFile))
	if err != nil {
		return fmt.Errorf("pki: %s without the previous CA: %w", rotationFile, err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(ca.dir, previousKeyFile))
	if err != nil {
		return fmt.Errorf("pki: %s without its key: %w", previousCertFile, err)
	}
	cert, err := ParseCertificatePEM(certPEM)
	if err != nil {
		return fmt.Errorf("pki: %s: %w", filepath.Join(ca.dir, previousCertFile), err)
	}
	key, err := ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return fmt.Errorf("pki: %s: %w", filepath.Join(ca.dir, previousKeyFile), err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) || publicKeysEqual(cert.PublicKey, ca.Cert.PublicKey) {
		return fmt.Errorf("pki: the previous CA in %s does not belong to this rotation (an interrupted rotate-ca? "+
			"shoal-hub rotate-ca --finish removes the overlap files; then rotate again)", ca.dir)
	}
	ca.prev = &previousCA{cert: cert, certPEM: certPEM, key: key, until: r.Until}
	return nil
}

// Rotation returns the rotation whose overlap is running, if one is.
func (ca *CA) Rotation() (Rotation, bool) {
	p := ca.overlap()
	if p == nil {
		return Rotation{}, false
	}
	return Rotation{Previous: p.cert, Until: p.until}, true
}

// overlap is the previous CA while the overlap runs, else nil.
func (ca *CA) overlap() *previousCA {
	if ca.prev == nil || !ca.now().Before(ca.prev.until) {
		return nil
	}
	return ca.prev
}

// BundlePEM is the trust bundle handed to agents and users: the CA, and
// during a rotation's overlap the previous CA after it.
func (ca *CA) BundlePEM() []byte {
	p := ca.overlap()
	if p == nil {
		return ca.CertPEM
	}
	return append(append([]byte{}, ca.CertPEM...), p.certPEM...)
}

// Hashes are the CA hashes an agent may pin: the CA's, and during a
// rotation's overlap the previous CA's after it.
func (ca *CA) Hashes() []string {
	out := []string{ca.Hash()}
	if p := ca.overlap(); p != nil {
		out = append(out, (&CA{Cert: p.cert}).Hash())
	}
	return out
}

// Signed reports whether cert was issued by the current CA (not by a
// previous one): an agent whose certificate is not is told to renew.
func (ca *CA) Signed(cert *x509.Certificate) bool {
	return cert.CheckSignatureFrom(ca.Cert) == nil
}

// Serving is the hub's serving certificate: one of the current CA, and
// during a rotation's overlap one of the previous CA, which is served until
// the overlap ends, so that clients that trust only the previous CA (agents
// and CLI configs from before the rotation) still verify the hub.
type Serving struct {
	current, previous tls.Certificate
	ca                *CA
}

// ServingCertificate issues the serving certificates for hosts (see
// ServerCertificate).
func (ca *CA) ServingCertificate(hosts []string) (*Serving, error) {
	cur, err := ca.ServerCertificate(hosts)
	if err != nil {
		return nil, err
	}
	s := &Serving{current: cur, ca: ca}
	if p := ca.overlap(); p != nil {
		prev := &CA{Cert: p.cert, key: p.key, now: ca.now}
		if s.previous, err = prev.ServerCertificate(hosts); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// TLSConfig is the hub's gRPC TLS configuration: TLS 1.3 only, client
// certificates requested and, when given, verified against the CA (Register
// is called without one). Each handshake gets the configuration of its
// time: during a CA rotation's overlap client certificates of the previous
// CA are accepted too and the previous CA's serving certificate is served;
// from the end of the overlap on, neither (no restart needed).
func (s *Serving) TLSConfig() *tls.Config {
	at := func() *tls.Config {
		return &tls.Config{
			MinVersion:   tls.VersionTLS13,
			Certificates: []tls.Certificate{s.Certificate()},
			ClientAuth:   tls.VerifyClientCertIfGiven,
			ClientCAs:    s.ca.Pool(),
			NextProtos:   []string{"h2"},
		}
	}
	cfg := at()
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) { return at(), nil }
	return cfg
}

// Certificate is the certificate to serve now.
func (s *Serving) Certificate() tls.Certificate {
	if s.ca.overlap() != nil && len(s.previous.Certificate) > 0 {
		return s.previous
	}
	return s.current
}

// RotateCA replaces the CA in dir by a new one and starts an overlap of
// the given length during which the old CA stays trusted: the old CA moves
// to previous-ca.crt/.key, the end of the overlap goes into rotation.json,
// a new key and CA certificate become ca.key and ca.crt, and the bootstrap
// admin certificate is reissued from the new CA. A hub (re)started on dir
// signs agent and user certificates with the new CA, accepts client
// certificates of both CAs and serves a certificate of the old one until
// the overlap ends; from then on only the new CA. It refuses to start a
// rotation while another one's overlap runs (ErrRotationInProgress;
// FinishRotation ends it early).
func RotateCA(dir string, overlap time.Duration) (*CA, error) {
	if overlap <= 0 {
		return nil, errors.New("pki: the overlap of a CA rotation must be positive")
	}
	old, err := loadCA(dir)
	if err != nil {
		return nil, err
	}
	if r, ok := old.Rotation(); ok {
		return nil, fmt.Errorf("%w: the previous CA is trusted until %s (end it first: shoal-hub rotate-ca --finish)",
			ErrRotationInProgress, r.Until.UTC().Format(time.RFC3339))
	}
	now := time.Now()
	until := now.Add(overlap)
	if until.After(old.Cert.NotAfter) {
		until = old.Cert.NotAfter
	}
	key, _, certPEM, err := newCACertificate("shoal-hub-ca-"+now.UTC().Format("20060102T150405Z"), now)
	if err != nil {
		return nil, err
	}
	oldKeyPEM, err := EncodePrivateKeyPEM(old.key)
	if err != nil {
		return nil, err
	}
	rec, _ := json.Marshal(Rotation{Until: until.UTC()})
	// The old CA and the record first, the new CA last: interrupted before
	// the record, dir holds the old CA (and stray previous-ca files that
	// nothing reads); after it, loadCA refuses a previous CA equal to the
	// current one, or a ca.crt without its ca.key, with a message saying
	// what to do. A hub never starts on the new CA without the overlap.
	if err := writeFile(filepath.Join(dir, previousKeyFile), oldKeyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeFile(filepath.Join(dir, previousCertFile), old.CertPEM, 0o644); err != nil {
		return nil, err
	}
	if err := writeFile(filepath.Join(dir, rotationFile), rec, 0o644); err != nil {
		return nil, err
	}
	if err := writeCA(dir, key, certPEM); err != nil {
		return nil, err
	}
	ca, err := loadCA(dir)
	if err != nil {
		return nil, err
	}
	if _, _, err := ca.ReissueAdminCertificate(); err != nil {
		return nil, err
	}
	return ca, nil
}

// FinishRotation ends a rotation's overlap now: the previous CA (key
// included) and the record are deleted, so a hub (re)started on dir
// trusts only the current CA. Without a rotation it does nothing.
func FinishRotation(dir string) error {
	for _, f := range []string{rotationFile, previousKeyFile, previousCertFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("pki: %w", err)
		}
	}
	return nil
}
