// SPDX-License-Identifier: Apache-2.0

// Command shoal is the Shoal CLI: it talks to the hub's gRPC API (clusters,
// jobs, queues, rollouts) and starts local fleets for development (shoal dev).
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "shoal",
		Short:         "Shoal federates Kubernetes GPU clusters into one pool",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newDevCommand())
	addHubCommands(root)
	if err := root.Execute(); err != nil {
		var exit exitError
		if errors.As(err, &exit) {
			os.Exit(exit.code)
		}
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}
