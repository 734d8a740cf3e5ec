// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/store"
)

// loadPKI loads (or creates) the hub CA in DataDir/pki, shared with the
// other replicas through st when PKIKeyFile is set (sharedPKI), and issues
// the serving certificates for ServerHosts (during a CA rotation's overlap
// one of each CA).
func loadPKI(ctx context.Context, c *Config, st *store.Store) (*pki.CA, *pki.Serving, error) {
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("create the data directory: %w", err)
	}
	var ca *pki.CA
	err := withPKI(ctx, c, st, func(dir string) error {
		var err error
		if ca, err = pki.LoadOrCreateCA(dir); err != nil {
			return err
		}
		// Issued here, when missing or due, so that the shared copy holds it.
		_, _, err = ca.AdminCertificate()
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	serving, err := ca.ServingCertificate(c.ServerHosts())
	if err != nil {
		return nil, nil, err
	}
	return ca, serving, nil
}

// withPKI runs fn on the PKI directory DataDir/pki: with PKIKeyFile
// through pki.Shared, so that what fn reads is the store's copy and what
// it changes is stored for every replica; without, on the directory alone,
// after checking that the store holds no shared CA this replica would
// ignore. st may be nil: a store is then opened (and closed) here when
// the configuration names one.
func withPKI(ctx context.Context, c *Config, st *store.Store, fn func(dir string) error) error {
	dir := filepath.Join(c.DataDir, "pki")
	if st == nil && len(c.Etcd.Endpoints) > 0 {
		var err error
		if st, err = openStore(ctx, c, false); err != nil {
			return err
		}
		defer func() { _ = st.Close() }()
	}
	if c.PKIKeyFile == "" {
		if st != nil {
			if err := pki.CheckUnshared(ctx, st); err != nil {
				return &ConfigError{Fields: []string{"PKIKeyFile"}, format: "%s: %v", args: []any{err}}
			}
		}
		return fn(dir)
	}
	if st == nil || st.Embedded() {
		return &ConfigError{Fields: []string{"PKIKeyFile", "Etcd.Endpoints"}, format: "%s shares the CA through an external etcd: set %s"}
	}
	key, err := pki.LoadKeyFile(c.PKIKeyFile)
	if err != nil {
		return err
	}
	shared, err := pki.NewShared(st, dir, key)
	if err != nil {
		return err
	}
	return shared.Do(ctx, fn)
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
		CAData: string(ca.BundlePEM()), CertData: string(certPEM), KeyData: string(keyPEM),
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
	if cfg.AdminConfig == "" {
		return errors.New("reissue-admin needs --admin-config to write the new identity to")
	}
	var ca *pki.CA
	err := withPKI(context.Background(), &cfg, nil, func(dir string) error {
		var err error
		if ca, err = pki.LoadOrCreateCA(dir); err != nil {
			return err
		}
		_, _, err = ca.ReissueAdminCertificate()
		return err
	})
	if err != nil {
		return err
	}
	return writeAdminConfig(&cfg, ca)
}

// RotateCA replaces the hub CA in cfg's DataDir by a new one, the old one
// trusted for overlap (pki.RotateCA), and writes the bootstrap admin
// identity of the new CA into AdminConfig (when set). Hub replicas pick
// the new CA up when they restart. It returns the rotation.
func RotateCA(cfg Config, overlap time.Duration) (pki.Rotation, error) {
	if err := cfg.Complete(); err != nil {
		return pki.Rotation{}, err
	}
	var ca *pki.CA
	err := withPKI(context.Background(), &cfg, nil, func(dir string) error {
		var err error
		ca, err = pki.RotateCA(dir, overlap)
		return err
	})
	if err != nil {
		return pki.Rotation{}, err
	}
	if err := writeAdminConfig(&cfg, ca); err != nil {
		return pki.Rotation{}, err
	}
	r, _ := ca.Rotation()
	return r, nil
}

// FinishCARotation ends the CA rotation in cfg's DataDir now
// (pki.FinishRotation) and rewrites AdminConfig's CA (when set) to the
// current CA alone. Hub replicas stop trusting the previous CA at their
// next restart, or by themselves when the overlap's time is up.
func FinishCARotation(cfg Config) error {
	if err := cfg.Complete(); err != nil {
		return err
	}
	var ca *pki.CA
	err := withPKI(context.Background(), &cfg, nil, func(dir string) error {
		if err := pki.FinishRotation(dir); err != nil {
			return err
		}
		var err error
		ca, err = pki.LoadOrCreateCA(dir)
		return err
	})
	if err != nil {
		return err
	}
	return writeAdminConfig(&cfg, ca)
}
