// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"sigs.k8s.io/yaml"
)

// writeStages copies the KWOK stage configs from src into dst. Unless
// keepDelays is set, it drops each stage's delay, so that pods turn Running
// within a fraction of a second instead of the 2–10 s the stock pod stages
// wait (a random container start time that would blur end-to-end timings).
func writeStages(src, dst string, keepDelays bool) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(src, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("%w: no KWOK stage configs in %s", ErrMissingBinaries, src)
	}
	sort.Strings(files)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if !keepDelays {
			if b, err = dropDelay(b); err != nil {
				return nil, fmt.Errorf("stage %s: %w", f, err)
			}
		}
		p := filepath.Join(dst, filepath.Base(f))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func dropDelay(b []byte) ([]byte, error) {
	var stage map[string]any
	if err := yaml.Unmarshal(b, &stage); err != nil {
		return nil, err
	}
	if spec, ok := stage["spec"].(map[string]any); ok {
		delete(spec, "delay")
	}
	return yaml.Marshal(stage)
}
