package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDevCommand returns `shoal dev`: start and stop a local fleet.
func newDevCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "dev",
		Short: "Start, stop and inspect a local fleet (not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("shoal dev is not built yet") },
	}
}
