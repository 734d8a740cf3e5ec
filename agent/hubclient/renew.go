// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	shoalv1alpha1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

// RenewFraction is the part of its lifetime after which the agent renews
// its certificate: at two thirds, a year-long certificate is renewed four
// months before it expires, and an agent cut off from the hub has a third
// of the lifetime to come back before it must register again.
const RenewFraction = 2.0 / 3

// minRenewInterval spaces renewals of very short certificates (tests).
const minRenewInterval = time.Second

// renewAt is when a certificate valid from notBefore to notAfter is renewed.
func renewAt(notBefore, notAfter time.Time) time.Time {
	return notBefore.Add(time.Duration(float64(notAfter.Sub(notBefore)) * RenewFraction))
}

// leaf parses the first certificate of certPEM.
func leaf(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("agent certificate: no PEM CERTIFICATE block")
	}
	return x509.ParseCertificate(block.Bytes)
}

// RunRenewal renews the agent's certificate over the current mTLS
// connection at RenewFraction of its lifetime, and at once when a
// heartbeat's answer asks for it (the hub rotated its CA): it generates a
// new key, sends its CSR (RenewCertificate), saves the new key, certificate
// and trust bundle through keeper (one Secret write), and switches the
// client's calls to a connection made with them — without a restart. The
// hub makes the new certificate current at its first use and refuses the
// old one from then on. Failures are retried with backoff until ctx ends.
func (c *Client) RunRenewal(ctx context.Context, keeper *Keeper) error {
	log := klog.FromContext(ctx).WithName("cert-renewal")
	bo := Backoff{Initial: time.Second, Max: time.Minute}
	last := time.Time{}
	for {
		cert, err := leaf(keeper.Current().CertPEM)
		if err != nil {
			return err
		}
		at := renewAt(cert.NotBefore, cert.NotAfter)
		if earliest := last.Add(minRenewInterval); at.Before(earliest) {
			at = earliest
		}
		t := time.NewTimer(time.Until(at))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
			log.Info("Renewing the agent certificate", "notAfter", cert.NotAfter)
		case <-c.renewNow:
			t.Stop()
			log.Info("The hub signs with a new CA; renewing the agent certificate", "notAfter", cert.NotAfter)
		}
		last = time.Now()
		next, err := c.renew(ctx, keeper)
		metricRenewals.WithLabelValues(result(err)).Inc()
		if err != nil {
			if time.Now().After(cert.NotAfter) {
				log.Error(err, "The agent certificate expired before it could be renewed: the hub refuses it; "+
					"register again (delete the credentials Secret, new join token)", "notAfter", cert.NotAfter, "secret", SecretName)
			} else {
				log.Error(err, "Renewing the agent certificate failed; retrying with backoff", "notAfter", cert.NotAfter)
			}
			if !Sleep(ctx, bo.Next()) {
				return nil
			}
			select { // the retry is due anyway
			case c.renewNow <- struct{}{}:
			default:
			}
			continue
		}
		bo.Reset()
		select { // asked for before the switch: answered by this renewal
		case <-c.renewNow:
		default:
		}
		log.Info("Renewed the agent certificate", "serial", next.SerialNumber.Text(16), "notAfter", next.NotAfter,
			"renewAt", renewAt(next.NotBefore, next.NotAfter))
	}
}

// renew makes one renewal: new key, CSR, RenewCertificate, save, switch.
func (c *Client) renew(ctx context.Context, keeper *Keeper) (*x509.Certificate, error) {
	cur := keeper.Current()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate agent key: %w", err)
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader,
		&x509.CertificateRequest{Subject: pkix.Name{CommonName: AgentCommonName(cur.Cluster)}}, key)
	if err != nil {
		return nil, fmt.Errorf("create CSR: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode agent key: %w", err)
	}
	callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := c.api().RenewCertificate(callCtx, &shoalv1alpha1.RenewCertificateRequest{
		CsrPem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER})})
	if err != nil {
		return nil, fmt.Errorf("renew certificate: %w", err)
	}
	next := *cur
	next.KeyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	next.CertPEM = resp.GetCertificatePem()
	if len(resp.GetCaPem()) > 0 {
		next.CAPEM = resp.GetCaPem()
	}
	if _, err := next.TLSConfig(serverName(c.addr)); err != nil { // the pair and the bundle are usable
		return nil, fmt.Errorf("renewed credentials: %w", err)
	}
	cert, err := leaf(next.CertPEM)
	if err != nil {
		return nil, err
	}
	saved, err := keeper.Update(ctx, func(cr *Credentials) { cr.KeyPEM, cr.CertPEM, cr.CAPEM = next.KeyPEM, next.CertPEM, next.CAPEM })
	if err != nil {
		return nil, err
	}
	if err := c.use(saved); err != nil {
		return nil, err
	}
	return cert, nil
}

// IssueHubCredentials asks the hub for a fresh hub-cluster kubeconfig (a
// new token) for this cluster, over the mTLS connection.
func (c *Client) IssueHubCredentials(ctx context.Context) ([]byte, error) {
	resp, err := c.api().IssueHubCredentials(ctx, &shoalv1alpha1.IssueHubCredentialsRequest{})
	if err != nil {
		return nil, err
	}
	if len(resp.GetHubKubeconfig()) == 0 {
		return nil, errors.New("the hub returned no hub-cluster kubeconfig")
	}
	return resp.GetHubKubeconfig(), nil
}
