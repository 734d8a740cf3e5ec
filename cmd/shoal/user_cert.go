// SPDX-License-Identifier: Apache-2.0

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

// newUserKey makes a P-256 key and a CSR for it with an empty subject (the
// hub names the user from the call or the create request).
func newUserKey() (keyPEM, csrPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csr}), nil
}

// writePrivate writes a secret file 0600, atomically, creating no directory.
func writePrivate(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func newUserCSRCommand() *cobra.Command {
	var keyOut, csrOut string
	cmd := &cobra.Command{
		Use:   "csr --key-out FILE [--csr-out FILE]",
		Short: "Make a private key and a CSR for it on this machine, for `shoal user create --csr` (the key never leaves it)",
		Long: "csr writes a new P-256 private key to --key-out (0600; an existing file is not overwritten) and its\n" +
			"certificate signing request to --csr-out or stdout. Hand the CSR, which holds no secret, to an admin,\n" +
			"who runs `shoal user create NAME --csr FILE --key-file PATH --out CONFIG` and hands back CONFIG;\n" +
			"keep the key at PATH (relative: beside CONFIG).",
		Example: "  shoal user csr --key-out ~/.shoal/alice.key --csr-out alice.csr",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if keyOut == "" {
				return errors.New("give --key-out FILE: where the private key stays")
			}
			if _, err := os.Stat(keyOut); err == nil {
				return fmt.Errorf("--key-out %s exists; remove it or choose another file", keyOut)
			}
			keyPEM, csrPEM, err := newUserKey()
			if err != nil {
				return err
			}
			if err := writePrivate(keyOut, keyPEM); err != nil {
				return fmt.Errorf("--key-out: %w", err)
			}
			if csrOut == "" {
				_, err = cmd.OutOrStdout().Write(csrPEM)
				return err
			}
			if err := os.WriteFile(csrOut, csrPEM, 0o644); err != nil {
				return fmt.Errorf("--csr-out: %w", err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "key in %s, CSR in %s\n", keyOut, csrOut)
			return err
		},
	}
	cmd.Flags().StringVar(&keyOut, "key-out", "", "file to write the new private key to (0600)")
	cmd.Flags().StringVar(&csrOut, "csr-out", "", "file to write the CSR to (default: stdout)")
	return cmd
}

func newUserRenewCommand() *cobra.Command {
	var validity time.Duration
	cmd := &cobra.Command{
		Use:   "renew [--cert-validity DURATION]",
		Short: "Renew the current context's user certificate for a new key made here; the old one stops working",
		Long: "renew makes a new private key on this machine, sends only its CSR to the hub over the session of the\n" +
			"context's current certificate, and writes the new certificate and key into the context (the key\n" +
			"where the context keeps it: keyData, or its keyFile). The hub refuses the old certificate from then on.\n" +
			"Renew before the certificate expires (`shoal auth whoami` shows when): an expired one cannot renew.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if validity < 0 || (validity > 0 && validity < time.Second) {
				return fmt.Errorf("--cert-validity %s: give at least 1s", validity)
			}
			hctx, err := currentContext()
			if err != nil {
				return err
			}
			if hctx.CertData == "" {
				return fmt.Errorf("context %q holds no client certificate to renew", hctx.Name)
			}
			if selectToken(hctx) != nil {
				return errors.New("renew authenticates with the context's certificate: unset $" + configv1alpha1.TokenEnv + " and --token-file")
			}
			keyPEM, csrPEM, err := newUserKey()
			if err != nil {
				return err
			}
			uc, done, err := usersClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			resp, err := uc.RenewCertificate(cmd.Context(), &shoalv1.RenewUserCertificateRequest{CsrPem: csrPEM,
				ValiditySeconds: int64(validity / time.Second)})
			if err != nil {
				return outCallError("renew the certificate", err)
			}
			if err := saveRenewed(hctx.Name, resp.CertPem, keyPEM); err != nil {
				return fmt.Errorf("the hub renewed the certificate but it could not be saved (the old one no longer works; "+
					"ask an admin for a new identity): %w", err)
			}
			cert, err := parseCertPEM(resp.CertPem)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "certificate of context %s renewed: serial %s, valid until %s\n",
				hctx.Name, cert.SerialNumber.Text(16), cert.NotAfter.UTC().Format(time.RFC3339))
			return err
		},
	}
	cmd.Flags().DurationVar(&validity, "cert-validity", 0, "lifetime of the new certificate (default and maximum: the hub's --user-cert-validity)")
	return cmd
}

// saveRenewed writes the renewed certificate and key into context name of
// the config file: the key into its keyFile when it keeps it there, else
// into keyData.
func saveRenewed(name string, certPEM, keyPEM []byte) error {
	path := configPath()
	cfg, err := configv1alpha1.Load(path)
	if err != nil {
		return err
	}
	c, err := cfg.Context(name)
	if err != nil {
		return err
	}
	if c.KeyData == "" && c.KeyFile != "" {
		if err := writePrivate(besideConfig(path, c.KeyFile), keyPEM); err != nil {
			return fmt.Errorf("keyFile: %w", err)
		}
	} else {
		c.KeyData = string(keyPEM)
	}
	c.CertData = string(certPEM)
	return cfg.Save(path)
}

func parseCertPEM(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("the hub sent no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}
