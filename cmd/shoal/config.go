// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
)

// hubFlags are the global flags that select the hub and the identity.
type hubFlags struct {
	config    string
	context   string
	hub       string
	tokenFile string
}

var globalHubFlags hubFlags

// addHubFlags adds --config, --context and --hub to root.
func addHubFlags(root *cobra.Command) {
	pf := root.PersistentFlags()
	pf.StringVar(&globalHubFlags.config, "config", "", "shoal config file ($SHOAL_CONFIG, default ~/.shoal/config)")
	pf.StringVar(&globalHubFlags.context, "context", "", "context of the config file to use (default: its currentContext)")
	pf.StringVar(&globalHubFlags.hub, "hub", "", "hub address host:port, overriding the context's")
	pf.StringVar(&globalHubFlags.tokenFile, "token-file", "", "file holding an OIDC ID token to authenticate with in place of the context's credentials "+
		"(also $"+configv1alpha1.TokenEnv+" or the context's tokenFile)")
}

// configPath is --config, $SHOAL_CONFIG or ~/.shoal/config.
func configPath() string {
	if globalHubFlags.config != "" {
		return globalHubFlags.config
	}
	return configv1alpha1.DefaultPath()
}

// currentContext loads the config file and returns the selected context
// with --hub applied.
func currentContext() (*configv1alpha1.Context, error) {
	path := configPath()
	cfg, err := configv1alpha1.Load(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no shoal config at %s: shoal-hub writes one on first start (--admin-config); "+
			"copy it here or pass --config/SHOAL_CONFIG", path)
	}
	if err != nil {
		return nil, err
	}
	hctx, err := cfg.Context(globalHubFlags.context)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := *hctx
	if globalHubFlags.hub != "" {
		c.Hub = globalHubFlags.hub
	}
	c.KeyFile, c.TokenFile = besideConfig(path, c.KeyFile), besideConfig(path, c.TokenFile)
	return &c, nil
}

// besideConfig makes a relative file of a context relative to the config
// file's directory (as kubeconfig does).
func besideConfig(configFile, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(configFile), p)
}

// dialHub connects to the hub of the selected context over mTLS. Errors of
// calls made on the connection name the hub and say what to check.
func dialHub(cmd *cobra.Command) (*grpc.ClientConn, error) {
	hctx, err := currentContext()
	if err != nil {
		return nil, err
	}
	tok := selectToken(hctx)
	if tok != nil {
		// The token is the identity: no client certificate is presented.
		hctx.CertData, hctx.KeyData, hctx.KeyFile = "", "", ""
	}
	tlsCfg, err := hctx.ClientTLSConfig()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", configPath(), err)
	}
	hint := errorHint{addr: hctx.Hub, context: hctx.Name, token: tok != nil}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)),
		grpc.WithUnaryInterceptor(hint.unary),
		grpc.WithStreamInterceptor(hint.stream),
	}
	if tok != nil {
		opts = append(opts, grpc.WithPerRPCCredentials(tok))
	}
	conn, err := grpc.NewClient(hctx.Hub, opts...)
	if err != nil {
		return nil, fmt.Errorf("hub address %q: %w", hctx.Hub, err)
	}
	return conn, nil
}

// errorHint rewrites connection and identity errors into messages that say
// what was wrong and what to do, keeping their gRPC codes.
type errorHint struct {
	addr, context string
	// token: the calls carry an OIDC ID token, not the context's certificate.
	token bool
}

func (h errorHint) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return h.explain(invoker(ctx, method, req, reply, cc, opts...))
}

func (h errorHint) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	return s, h.explain(err)
}

func (h errorHint) explain(err error) error {
	st, ok := status.FromError(err)
	if !ok || err == nil {
		return err
	}
	switch st.Code() {
	case codes.Unavailable:
		st = status.Newf(codes.Unavailable, "cannot reach hub at %s: is shoal-hub running? "+
			"(shoal --hub ADDR … or --context NAME to pick another hub): %s", h.addr, st.Message())
	case codes.Unauthenticated:
		if h.token {
			st = status.Newf(codes.Unauthenticated, "hub at %s refused the ID token (--token-file, $%s or the context's tokenFile): %s",
				h.addr, configv1alpha1.TokenEnv, st.Message())
			break
		}
		st = status.Newf(codes.Unauthenticated, "hub at %s refused the credentials of context %q: "+
			"is the config from this hub? (shoal-hub writes it to --admin-config): %s", h.addr, h.context, st.Message())
	case codes.PermissionDenied:
		st = status.Newf(codes.PermissionDenied, "the identity of context %q may not do this "+
			"(`shoal auth can-i VERB RESOURCE` says what it may do; an admin grants roles with `shoal user create`): %s",
			h.context, st.Message())
	}
	return hubError{st}
}

// hubError prints only the hub's message (not "rpc error: code = …") and
// keeps the status for status.Code.
type hubError struct{ st *status.Status }

func (e hubError) Error() string              { return e.st.Message() }
func (e hubError) GRPCStatus() *status.Status { return e.st }
