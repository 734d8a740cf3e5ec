// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-dev/shoal/hub/app"
	"github.com/shoal-dev/shoal/hub/pki"
)

// newRotateCACommand is `shoal-hub rotate-ca`: a new hub CA, the old one
// trusted during an overlap (docs/operations.md, "Rotating the hub CA").
func newRotateCACommand() *cobra.Command {
	cfg := app.DefaultConfig()
	var overlap time.Duration
	var finish bool
	cmd := &cobra.Command{
		Use:   "rotate-ca",
		Short: "Replace the hub CA by a new one, trusting the old one during an overlap (run on the hub's machine, then restart the hub)",
		Long: "rotate-ca creates a new hub CA in --data-dir/pki and keeps the old one as the previous CA until --overlap has passed.\n" +
			"A hub restarted on the data directory signs agent and user certificates with the new CA, accepts client\n" +
			"certificates of both and serves a certificate of the old CA (which clients from before the rotation trust)\n" +
			"until the overlap ends; agents with a certificate of the old CA are told to renew at their next heartbeat and\n" +
			"receive the new CA with their new certificate. From the end of the overlap on, the hub (without a restart)\n" +
			"serves a certificate of the new CA and refuses certificates of the old one. The bootstrap admin identity of\n" +
			"the new CA is written into --admin-config. --finish ends the overlap now (restart the hub afterwards).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if finish {
				if err := app.FinishCARotation(cfg); err != nil {
					return err
				}
				_, err := fmt.Fprintln(cmd.OutOrStdout(), "the previous CA is no longer trusted; restart every hub replica")
				return err
			}
			if overlap <= 0 {
				return errors.New("--overlap must be positive")
			}
			r, err := app.RotateCA(cfg, overlap)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "new hub CA in %s/pki; the previous CA is trusted until %s\n"+
				"restart every hub replica now; agents renew onto the new CA by themselves, users need new certificates before then\n",
				cfg.DataDir, r.Until.UTC().Format(time.RFC3339))
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "the hub's data directory (holds the CA in pki/)")
	fs.DurationVar(&overlap, "overlap", pki.DefaultRotationOverlap, "how long the previous CA stays trusted; agents must reach the hub within it")
	fs.BoolVar(&finish, "finish", false, "end the current rotation's overlap now: forget the previous CA")
	fs.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "host[:port] the CLI dials (default: as shoal-hub)")
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "the hub's gRPC listen address (for the default advertise address)")
	fs.StringVar(&cfg.AdminConfig, "admin-config", cfg.AdminConfig, "shoal CLI config file to write the new admin identity into (\"\" skips it)")
	fs.StringVar(&cfg.AdminContext, "admin-context", cfg.AdminContext, "name of the context written into --admin-config")
	addSharedPKIFlags(fs, &cfg)
	return cmd
}
