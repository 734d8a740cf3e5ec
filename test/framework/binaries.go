// Package framework starts the real parts Shoal's integration and end-to-end
// tests run against: etcd, kube-apiservers, kube-schedulers and KWOK GPU
// nodes built by `make k8s-bin` into the binary cache.
package framework

import (
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

// RequiredBinaries are the executables the local fleet needs.
var RequiredBinaries = []string{"etcd", "kube-apiserver", "kube-scheduler", "kwok"}

// CheckBinaries returns an error naming every missing binary and the command
// that builds them.
func CheckBinaries() error {
	var missing []string
	for _, b := range RequiredBinaries {
		if st, err := os.Stat(filepath.Join(BinDir(), b)); err != nil || st.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing Kubernetes binaries %v in %s: run `make k8s-bin` (about 20 minutes the first time)", missing, BinDir())
	}
	return nil
}
