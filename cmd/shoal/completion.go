// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newCompletionCommand returns `shoal completion bash|zsh|fish`.
func newCompletionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: "Load completions in the current shell:\n\n" +
			"  source <(shoal completion bash)\n" +
			"  source <(shoal completion zsh)   # after compinit\n" +
			"  shoal completion fish | source\n\n" +
			"Cluster names and -o values complete from the hub.",
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"bash", "zsh", "fish"},
		RunE: func(cmd *cobra.Command, args []string) error {
			root, out := cmd.Root(), cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			}
			return fmt.Errorf("unknown shell %q: use bash, zsh or fish", args[0])
		},
	}
}
