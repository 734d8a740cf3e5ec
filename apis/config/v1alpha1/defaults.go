// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"os"
	"path/filepath"
)

// PathEnv is the environment variable that overrides the config file's path.
const PathEnv = "SHOAL_CONFIG"

// TokenEnv is the environment variable holding an OIDC ID token for the
// CLI to send as a bearer token (in place of a context's credentials).
const TokenEnv = "SHOAL_TOKEN"

// SetDefaults fills the config's apiVersion and kind.
func SetDefaults(c *ClientConfig) { c.APIVersion, c.Kind = APIVersion, Kind }

// DefaultPath is where the CLI looks for its config when no --config is
// given: $SHOAL_CONFIG, or .shoal/config under the home directory.
func DefaultPath() string {
	if p := os.Getenv(PathEnv); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".shoal", "config")
	}
	return filepath.Join(home, ".shoal", "config")
}
