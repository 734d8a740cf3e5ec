// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteStages(t *testing.T) {
	const stage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  delay:
    durationMilliseconds: 1000
    jitterDurationMilliseconds: 5000
  resourceRef:
    apiGroup: v1
    kind: Pod
`
	tests := []struct {
		name       string
		keepDelays bool
		wantDelay  bool
	}{{"delays dropped", false, false}, {"delays kept", true, true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(src, "pod-ready.yaml"), []byte(stage), 0o644); err != nil {
				t.Fatal(err)
			}
			files, err := writeStages(src, dst, tt.keepDelays)
			if err != nil || len(files) != 1 {
				t.Fatalf("writeStages: %v %v", files, err)
			}
			b, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			out := string(b)
			if strings.Contains(out, "delay") != tt.wantDelay || !strings.Contains(out, "kind: Pod") {
				t.Errorf("stage written as:\n%s", out)
			}
		})
	}
	if _, err := writeStages(t.TempDir(), t.TempDir(), false); err == nil {
		t.Error("writeStages from an empty directory succeeded")
	}
}
