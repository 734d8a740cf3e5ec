// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// ErrNoClientCA is returned when a kubelet endpoint would start with
// neither a client CA nor an explicit choice to serve any client.
var ErrNoClientCA = errors.New("kubelet endpoint: no client CA (--kubelet-client-ca) and any client not allowed (--kubelet-insecure-allow-any-client)")

// tlsConfig is the TLS configuration of a kubelet endpoint: a self-signed
// serving certificate for certHost and, with clientCAs, a client
// certificate signed by one of them required at the handshake (the hub API
// server's --kubelet-client-certificate). Without clientCAs any client is
// served: allowAnyClient must say so.
func tlsConfig(certHost string, clientCAs *x509.CertPool, allowAnyClient bool) (*tls.Config, error) {
	if clientCAs == nil && !allowAnyClient {
		return nil, ErrNoClientCA
	}
	cert, err := selfSigned(certHost)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert}
	if clientCAs != nil {
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs
	}
	return cfg, nil
}

// listen opens the TLS port of a kubelet endpoint (tlsConfig).
func listen(addr, certHost string, clientCAs *x509.CertPool, allowAnyClient bool) (net.Listener, int32, error) {
	cfg, err := tlsConfig(certHost, clientCAs, allowAnyClient)
	if err != nil {
		return nil, 0, err
	}
	l, err := tls.Listen("tcp", addr, cfg)
	if err != nil {
		return nil, 0, fmt.Errorf("kubelet endpoint: %w", err)
	}
	return l, int32(l.Addr().(*net.TCPAddr).Port), nil
}

// selfSigned makes a serving certificate for host (the hub's API server does
// not verify kubelet certificates unless --kubelet-certificate-authority is set).
func selfSigned(host string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "shoal-agent-kubelet"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else if host != "" {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// LoadClientCAs reads a PEM file of CA certificates for the kubelet
// endpoints' client verification.
func LoadClientCAs(file string) (*x509.CertPool, error) {
	pemBytes, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("kubelet client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("kubelet client CA %s: no PEM certificate", file)
	}
	return pool, nil
}
