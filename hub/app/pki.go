// SPDX-License-Identifier: Apache-2.0

package app

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	"github.com/shoal-dev/shoal/hub/pki"
)

// loadPKI loads (or creates) the hub CA in DataDir/pki and issues the
// serving certificate for ServerHosts.
func loadPKI(c *Config) (*pki.CA, tls.Certificate, error) {
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("create the data directory: %w", err)
	}
	ca, err := pki.LoadOrCreateCA(filepath.Join(c.DataDir, "pki"))
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	serving, err := ca.ServerCertificate(c.ServerHosts())
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	return ca, serving, nil
}

// writeAdminConfig puts the admin identity for this hub into the CLI config
// file AdminConfig as context AdminContext.
func writeAdminConfig(c *Config, ca *pki.CA) error {
	if c.AdminConfig == "" {
		return nil
	}
	certPEM, keyPEM, err := ca.AdminCertificate()
	if err != nil {
		return err
	}
	cfg, err := configv1alpha1.Load(c.AdminConfig)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("admin config: %w", err)
	}
	cfg.SetContext(configv1alpha1.Context{
		Name: c.AdminContext, Hub: c.AdvertiseAddress,
		CAData: string(ca.CertPEM), CertData: string(certPEM), KeyData: string(keyPEM),
	})
	return cfg.Save(c.AdminConfig)
}

// ReissueAdmin issues a new bootstrap admin certificate from the CA in
// cfg's DataDir (the old one, revoked or not, is no longer the hub's) and
// writes it into AdminConfig: the way back in after `shoal user revoke
// admin`. It needs only the CA files, so it runs on the hub's machine
// beside a running hub; the new certificate works at the next call.
func ReissueAdmin(cfg Config) error {
	if err := cfg.Complete(); err != nil {
		return err
	}
	ca, err := pki.LoadOrCreateCA(filepath.Join(cfg.DataDir, "pki"))
	if err != nil {
		return err
	}
	if _, _, err := ca.ReissueAdminCertificate(); err != nil {
		return err
	}
	if cfg.AdminConfig == "" {
		return errors.New("reissue-admin needs --admin-config to write the new identity to")
	}
	return writeAdminConfig(&cfg, ca)
}
