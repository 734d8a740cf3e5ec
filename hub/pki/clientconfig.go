package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// ClientConfig is the shoal CLI's configuration file (~/.shoal/config):
// named contexts, each a hub address and the identity to present, like a
// kubeconfig.
type ClientConfig struct {
	APIVersion     string    `json:"apiVersion"`
	Kind           string    `json:"kind"`
	CurrentContext string    `json:"currentContext,omitempty"`
	Contexts       []Context `json:"contexts"`
}

// Context is one hub and the credentials to use with it.
type Context struct {
	// Name identifies the context (--context).
	Name string `json:"name"`
	// Hub is the hub's gRPC address, host:port.
	Hub string `json:"hub"`
	// ServerName overrides the TLS server name checked in the hub's certificate.
	ServerName string `json:"serverName,omitempty"`
	// CAData is the hub CA certificate in PEM.
	CAData string `json:"caData"`
	// CertData and KeyData are the client certificate and key in PEM.
	CertData string `json:"certData"`
	KeyData  string `json:"keyData"`
}

// Context returns the named context, or the current one when name is "".
func (c *ClientConfig) Context(name string) (*Context, error) {
	if name == "" {
		name = c.CurrentContext
	}
	if name == "" && len(c.Contexts) == 1 {
		return &c.Contexts[0], nil
	}
	for i := range c.Contexts {
		if c.Contexts[i].Name == name {
			return &c.Contexts[i], nil
		}
	}
	if name == "" {
		return nil, errors.New("no current context: pass --context or set currentContext")
	}
	return nil, fmt.Errorf("no context %q", name)
}

// SetContext adds ctx, replacing a context of the same name; it becomes
// the current context when there is none.
func (c *ClientConfig) SetContext(ctx Context) {
	c.APIVersion, c.Kind = "shoal.dev/v1alpha1", "Config"
	if c.CurrentContext == "" {
		c.CurrentContext = ctx.Name
	}
	for i := range c.Contexts {
		if c.Contexts[i].Name == ctx.Name {
			c.Contexts[i] = ctx
			return
		}
	}
	c.Contexts = append(c.Contexts, ctx)
}

// LoadClientConfig reads a config file. A missing file is an empty config
// and an error wrapping os.ErrNotExist.
func LoadClientConfig(path string) (*ClientConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return &ClientConfig{}, err
	}
	var c ClientConfig
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return &ClientConfig{}, fmt.Errorf("parse %s: %w", path, err)
	}
	return &c, nil
}

// Save writes the config file 0600 (it holds a private key), creating its directory.
func (c *ClientConfig) Save(path string) error {
	data, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	return writeFile(path, data, 0o600)
}

// ClientTLSConfig returns the TLS configuration to dial the hub with ctx's identity.
func (ctx *Context) ClientTLSConfig() (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(ctx.CAData)) {
		return nil, fmt.Errorf("context %q: caData holds no PEM certificate", ctx.Name)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, ServerName: ctx.ServerName}
	if ctx.CertData != "" || ctx.KeyData != "" {
		cert, err := tls.X509KeyPair([]byte(ctx.CertData), []byte(ctx.KeyData))
		if err != nil {
			return nil, fmt.Errorf("context %q: client certificate: %w", ctx.Name, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
