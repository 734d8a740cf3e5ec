// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/shoal-dev/shoal/hub/app"
)

// newReissueAdminCommand is `shoal-hub reissue-admin`: a new bootstrap
// admin certificate after the old one was revoked (docs/security.md).
func newReissueAdminCommand() *cobra.Command {
	cfg := app.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "reissue-admin",
		Short: "Issue a new bootstrap admin certificate from the hub CA and write it into --admin-config (run on the hub's machine)",
		Long: "reissue-admin is the way back in after `shoal user revoke admin`: it reads the hub CA in --data-dir,\n" +
			"issues a new bootstrap admin certificate (a new serial, so not revoked) and writes it into --admin-config.\n" +
			"The hub need not restart; the old certificate stays revoked.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := app.ReissueAdmin(cfg); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "wrote a new bootstrap admin identity into %s (context %s)\n", cfg.AdminConfig, cfg.AdminContext)
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "the hub's data directory (holds the CA in pki/)")
	fs.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "host[:port] the CLI dials (default: as shoal-hub)")
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "the hub's gRPC listen address (for the default advertise address)")
	fs.StringVar(&cfg.AdminConfig, "admin-config", cfg.AdminConfig, "shoal CLI config file to write the new admin identity into")
	fs.StringVar(&cfg.AdminContext, "admin-context", cfg.AdminContext, "name of the context written into --admin-config")
	addSharedPKIFlags(fs, &cfg)
	return cmd
}
