// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// KubeletClientUser is the user of the certificate the control planes'
// API servers present to kubelets (--kubelet-client-certificate), in
// system:masters as kubeadm's apiserver-kubelet-client once was.
const KubeletClientUser = "kube-apiserver-kubelet-client"

// KubeletClientCA is a CA that signs kubelet client certificates: the one
// a control plane's API server presents to kubelets, and any a test needs.
type KubeletClientCA struct {
	// CAFile is the CA certificate, PEM (an agent's --kubelet-client-ca).
	CAFile string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	serial atomic.Int64
}

// NewKubeletClientCA writes a new CA certificate under dir.
func NewKubeletClientCA(dir string) (*KubeletClientCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubelet-client-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &KubeletClientCA{CAFile: filepath.Join(dir, "kubelet-client-ca.crt"), cert: cert, key: key}
	ca.serial.Store(1)
	if err := os.WriteFile(ca.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	return ca, nil
}

// Issue returns a client certificate for user in groups (the
// organizations), signed by the CA.
func (ca *KubeletClientCA) Issue(user string, groups ...string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.serial.Add(1)),
		Subject:   pkix.Name{CommonName: user, Organization: groups},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// writeClient writes a client certificate and key for user in groups
// under dir, PEM, and returns their paths.
func (ca *KubeletClientCA) writeClient(dir, user string, groups ...string) (certFile, keyFile string, err error) {
	c, err := ca.Issue(user, groups...)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(c.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "kubelet-client.crt"), filepath.Join(dir, "kubelet-client.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// kubeletClientArgs makes a CA under dir and the API server's kubelet
// client certificate signed by it.
func kubeletClientArgs(dir string) (*KubeletClientCA, map[string]string, error) {
	ca, err := NewKubeletClientCA(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("kubelet client CA: %w", err)
	}
	cert, key, err := ca.writeClient(dir, KubeletClientUser, "system:masters")
	if err != nil {
		return nil, nil, fmt.Errorf("kubelet client certificate: %w", err)
	}
	return ca, map[string]string{"kubelet-client-certificate": cert, "kubelet-client-key": key}, nil
}
