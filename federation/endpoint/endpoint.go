// SPDX-License-Identifier: Apache-2.0

package endpoint

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
)

// ErrExposed is the error of a non-loopback address without TLS and
// client authentication.
var ErrExposed = errors.New("not a loopback address: serving it there needs TLS with client certificates (certificate, key and client CA)")

// ErrIncompleteTLS is the error of TLS files given only in part.
var ErrIncompleteTLS = errors.New("TLS certificate, key and client CA go together")

// TLSFiles are the PEM files of an endpoint's TLS: its serving
// certificate and key, and the CA bundle its clients' certificates must
// chain to.
type TLSFiles struct {
	CertFile, KeyFile, ClientCAFile string
}

// Set reports whether any file is given.
func (f TLSFiles) Set() bool { return f.CertFile != "" || f.KeyFile != "" || f.ClientCAFile != "" }

// Complete reports whether every file is given.
func (f TLSFiles) Complete() bool { return f.CertFile != "" && f.KeyFile != "" && f.ClientCAFile != "" }

// Config is one endpoint: the address it listens on and its TLS.
type Config struct {
	// Addr is host:port; "" disables the endpoint.
	Addr string
	// TLS, when set, must be complete; it is required unless Addr is a
	// loopback address.
	TLS TLSFiles
}

// Validate checks the Config without touching files: an address that is
// not a loopback address needs complete TLS, and TLS is all or nothing.
func (c Config) Validate() error {
	if c.Addr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("%q: want host:port: %w", c.Addr, err)
	}
	if c.TLS.Set() && !c.TLS.Complete() {
		return ErrIncompleteTLS
	}
	if !c.TLS.Set() && !IsLoopback(c.Addr) {
		return fmt.Errorf("%s: %w", c.Addr, ErrExposed)
	}
	return nil
}

// IsLoopback reports whether host:port addr listens on loopback only:
// "localhost" or a loopback IP. An empty host (all addresses) is not.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listen validates the Config and binds it; with TLS the listener
// requires client certificates that chain to ClientCAFile. A disabled
// endpoint returns nil, nil.
func (c Config) Listen() (net.Listener, error) {
	if c.Addr == "" {
		return nil, nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	if c.TLS.Set() {
		var err error
		if tlsCfg, err = c.TLS.ServerConfig(); err != nil {
			return nil, err
		}
	}
	l, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		l = tls.NewListener(l, tlsCfg)
	}
	return l, nil
}

// ServerConfig loads the files into a serving configuration that requires
// and verifies client certificates.
func (f TLSFiles) ServerConfig() (*tls.Config, error) {
	if !f.Complete() {
		return nil, ErrIncompleteTLS
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("endpoint certificate: %w", err)
	}
	pem, err := os.ReadFile(f.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("endpoint client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("endpoint client CA %s: no PEM certificate found", f.ClientCAFile)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	}, nil
}
