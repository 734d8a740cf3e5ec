// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/shoal-dev/shoal/hub/app"
)

// newAdminConfigCommand is `shoal-hub admin-config`: prints the shoal CLI
// config with the bootstrap admin identity that a running shoal-hub wrote
// into its --admin-config, for images without a shell (`kubectl exec
// shoal-hub-0 -- /shoal-hub admin-config --admin-config=…`, docs/install.md).
func newAdminConfigCommand() *cobra.Command {
	path := app.DefaultConfig().AdminConfig
	cmd := &cobra.Command{
		Use:   "admin-config",
		Short: "Print the shoal CLI config (bootstrap admin identity) that shoal-hub wrote into --admin-config",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("the admin config shoal-hub writes at every start: %w", err)
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	cmd.Flags().StringVar(&path, "admin-config", path, "the file shoal-hub's --admin-config names")
	return cmd
}
