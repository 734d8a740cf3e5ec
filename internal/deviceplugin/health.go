// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// ReadHealthFile reads the device IDs a health file marks unhealthy: one ID
// a line; blank lines and lines starting with # are skipped. A missing file
// marks nothing.
func ReadHealthFile(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	out := map[string]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if line := strings.TrimSpace(s.Text()); line != "" && !strings.HasPrefix(line, "#") {
			out[line] = true
		}
	}
	return out, s.Err()
}

// watchHealth reads path every interval and applies it to devs until ctx
// ends.
func watchHealth(ctx context.Context, path string, interval time.Duration, devs *devices) {
	log := klog.FromContext(ctx).WithValues("healthFile", path)
	t := time.NewTicker(interval)
	defer t.Stop()
	var (
		lastErr string
		last    map[string]bool
	)
	for {
		ids, err := ReadHealthFile(path)
		switch {
		case err != nil && err.Error() != lastErr:
			log.Error(err, "Cannot read the health file; device health unchanged")
			lastErr = err.Error()
		case err == nil:
			lastErr = ""
			if last == nil || !mapsEqual(ids, last) {
				known, unknown := split(ids, devs)
				log.Info("Health file read", "unhealthy", known, "notDevices", unknown, "changed", devs.setUnhealthy(ids))
				last = ids
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// split sorts ids into those that are devices and those that are not.
func split(ids map[string]bool, devs *devices) (known, unknown []string) {
	for id := range ids {
		if devs.has(id) {
			known = append(known, id)
		} else {
			unknown = append(unknown, id)
		}
	}
	sort.Strings(known)
	sort.Strings(unknown)
	return known, unknown
}
