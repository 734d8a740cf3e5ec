// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent/podsync"
)

// KubeletServer serves the kubelet API (container logs, exec) of all the
// agent's virtual nodes on one TLS port, backed by the workload cluster.
type KubeletServer struct {
	// Addr to listen on, e.g. ":10250".
	Addr string
	// Address is the IP or name the certificate is made for.
	Address string
	// ClientCAs, when set, must have signed the API server's kubelet client
	// certificate (--kubelet-client-certificate); otherwise any client is served.
	ClientCAs *x509.CertPool
	Syncer    *podsync.Syncer

	listener net.Listener
}

// Listen opens the port (so that a caller knows it before Serve).
func (k *KubeletServer) Listen() (int32, error) {
	cert, err := selfSigned(k.Address)
	if err != nil {
		return 0, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert}
	if k.ClientCAs != nil {
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, k.ClientCAs
	}
	l, err := tls.Listen("tcp", k.Addr, cfg)
	if err != nil {
		return 0, fmt.Errorf("kubelet endpoint: %w", err)
	}
	k.listener = l
	return int32(l.Addr().(*net.TCPAddr).Port), nil
}

// Serve serves until ctx ends. Call Listen first.
func (k *KubeletServer) Serve(ctx context.Context) error {
	s := k.Syncer
	h := api.PodHandler(api.PodHandlerConfig{
		GetContainerLogs: s.Logs,
		RunInContainer:   s.Exec,
		AttachToContainer: func(context.Context, string, string, string, api.AttachIO) error {
			return errdefs.NotFound("attach is not supported by the Shoal agent")
		},
		PortForward: func(context.Context, string, string, int32, io.ReadWriteCloser) error {
			return errdefs.NotFound("port-forward is not supported by the Shoal agent")
		},
		GetPods:               func(ctx context.Context) ([]*corev1.Pod, error) { return nil, nil },
		GetPodsFromKubernetes: func(ctx context.Context) ([]*corev1.Pod, error) { return nil, nil },
		StreamIdleTimeout:     30 * time.Minute, StreamCreationTimeout: 30 * time.Second,
	}, false)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	klog.FromContext(ctx).Info("Serving the kubelet API", "addr", k.listener.Addr().String())
	if err := srv.Serve(k.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
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
