// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"errors"
	"fmt"

	shoalv1alpha1 "github.com/shoal-dev/shoal/apis/v1alpha1"
)

// APIVersion and Kind of the client configuration file.
const (
	APIVersion = shoalv1alpha1.APIVersion
	Kind       = "Config"
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
	// KeyFile is a file holding the client key in PEM, in place of KeyData
	// (a key made by `shoal user csr` that never left the user's machine);
	// a relative path is relative to the config file's directory.
	KeyFile string `json:"keyFile,omitempty"`
	// TokenFile is a file holding an OIDC ID token, sent as a bearer token
	// in place of the client certificate; read at every call, so that a
	// refreshed token is picked up. Relative as KeyFile.
	TokenFile string `json:"tokenFile,omitempty"`
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
	SetDefaults(c)
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
