// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-dev/shoal/federation/endpoint"
)

func newUICommand() *cobra.Command {
	var listen, restURL string
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Open the hub's web fleet view through a local proxy that adds your credentials",
		Long: "Serves the hub's read-only fleet view (/ui/ on the hub's REST listener) on a loopback address, " +
			"forwarding the browser's reads to the hub with the identity of the current context (its client " +
			"certificate, or the ID token of --token-file/$SHOAL_TOKEN), like kubectl proxy. Open the printed " +
			"address: it carries a one-time session secret, so other local users cannot use the proxy. " +
			"Only GET and HEAD are forwarded.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !endpoint.IsLoopback(listen) {
				return fmt.Errorf("--listen %s: shoal ui serves loopback addresses only (127.0.0.1, ::1, localhost)", listen)
			}
			hctx, err := currentContext()
			if err != nil {
				return err
			}
			base, err := uiRESTURL(restURL)
			if err != nil {
				return err
			}
			tok := selectToken(hctx)
			if tok != nil {
				hctx.CertData, hctx.KeyData, hctx.KeyFile = "", "", ""
			}
			tlsCfg, err := hctx.ClientTLSConfig()
			if err != nil {
				return fmt.Errorf("%s: %w", configPath(), err)
			}
			var authorize func(*http.Request) error
			if tok != nil {
				authorize = func(r *http.Request) error {
					md, err := tok.GetRequestMetadata(r.Context())
					if err != nil {
						return err
					}
					r.Header.Set("Authorization", md["authorization"])
					return nil
				}
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			transport := &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true, IdleConnTimeout: time.Minute}
			p, err := newUIProxy(base, transport, authorize, ln.Addr().String())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", p.URL())
			fmt.Fprintf(cmd.ErrOrStderr(), "shoal ui: open the address above; forwarding reads to %s as context %s (Ctrl-C stops)\n", base, hctx.Name)
			srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			go func() {
				<-ctx.Done()
				_ = srv.Close()
			}()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8001", "loopback address to serve the view on (port 0: any free port)")
	cmd.Flags().StringVar(&restURL, "rest-url", "", "base URL of the hub's REST listener, its --rest-listen (default $"+uiRESTEnv+"; shoal dev env prints it)")
	return cmd
}

// uiRESTEnv names the environment variable with the default --rest-url.
const uiRESTEnv = "SHOAL_REST_URL"

// uiRESTURL is --rest-url, or $SHOAL_REST_URL.
func uiRESTURL(flag string) (*url.URL, error) {
	raw := flag
	if raw == "" {
		raw = os.Getenv(uiRESTEnv)
	}
	if raw == "" {
		return nil, fmt.Errorf("pass --rest-url https://HOST:PORT (the hub's --rest-listen) or set $%s", uiRESTEnv)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Scheme != "https" {
		return nil, fmt.Errorf("--rest-url %q: want https://host:port (the hub's --rest-listen serves TLS only)", raw)
	}
	return u, nil
}
