// SPDX-License-Identifier: Apache-2.0

package main

import "github.com/spf13/cobra"

// addHubCommands adds the global hub flags and the commands that talk to the hub API.
func addHubCommands(root *cobra.Command) {
	addHubFlags(root)
	root.AddCommand(newClusterCommand(), newNodeCommand(), newCompletionCommand(), newTopCommand(), newUICommand())
	addJobCommands(root)
	addQueueCommands(root)
	addGitOpsCommands(root)
	addRolloutCommands(root)
	addModelCommands(root)
	addPoolCommands(root)
	addServiceCommands(root)
	addUserCommands(root)
}
