package main

import "github.com/spf13/cobra"

// addHubCommands adds the commands that talk to the hub API.
func addHubCommands(root *cobra.Command) {}
