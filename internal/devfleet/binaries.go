// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// CacheDir is where `make k8s-bin` keeps its outputs: $SHOAL_CACHE, or
// shoal/ under the user's cache directory.
func CacheDir() string {
	if d := os.Getenv("SHOAL_CACHE"); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = filepath.Join(os.TempDir(), "cache")
	}
	return filepath.Join(base, "shoal")
}

// BinDir holds kube-apiserver, kube-scheduler, kube-controller-manager, etcd and kwok.
func BinDir() string { return filepath.Join(CacheDir(), "bin") }

// KwokStagesDir holds the KWOK stage configs copied from the kwok module.
func KwokStagesDir() string { return filepath.Join(CacheDir(), "kwok-stages") }

// DefaultDir is where `shoal dev` keeps a fleet: $SHOAL_DEV_DIR or ~/.shoal/dev.
func DefaultDir() string {
	if d := os.Getenv("SHOAL_DEV_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "shoal-dev")
	}
	return filepath.Join(home, ".shoal", "dev")
}

// RequiredBinaries are the executables the local fleet needs.
var RequiredBinaries = []string{"etcd", "kube-apiserver", "kube-scheduler", "kwok"}

// ErrMissingBinaries is returned (wrapped) when the binary cache is incomplete.
var ErrMissingBinaries = errors.New("missing Kubernetes binaries")

// CheckBinaries returns an error naming every missing binary in dir (and the
// KWOK stage configs in stagesDir when it is not empty) and the command that builds them.
func CheckBinaries(dir, stagesDir string) error {
	var missing []string
	for _, b := range RequiredBinaries {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if stagesDir != "" {
		if m, _ := filepath.Glob(filepath.Join(stagesDir, "*.yaml")); len(m) == 0 {
			missing = append(missing, "kwok-stages")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w %v in %s: run `make k8s-bin` (about 20 minutes the first time)", ErrMissingBinaries, missing, dir)
	}
	return nil
}
