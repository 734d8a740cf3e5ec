// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
)

// TestPoolCommandsReachTheHub drives the pool commands and queue --pool
// against a real hub: create from the example, bind a queue, cordon,
// drain, scale to zero, and a delete refused while the queue is bound.
func TestPoolCommandsReachTheHub(t *testing.T) {
	config := startHub(t)
	for _, step := range []struct {
		args    []string
		wantOut string // substring of the output
		wantErr string // substring of the error; "" for success
	}{
		{[]string{"pool", "create", "-f", "../../examples/gpu-pool.yaml"}, "gpupool/training-h100 created", ""},
		{[]string{"pool", "create", "eu-spot", "--cluster-selector", "region=eu", "--scale-to-zero"}, "gpupool/eu-spot created", ""},
		{[]string{"pool", "create", "Bad_Name"}, "", "create gpupool/Bad_Name: "},
		{[]string{"pool", "list", "-o", "wide"}, "training-h100   0          0       0/0    0      Ready", ""},
		{[]string{"queue", "create", "research/train", "--pool", "training-h100"}, "queue/research/train created", ""},
		{[]string{"queue", "create", "research/other", "--pool", "nope"}, "", "nope"},
		{[]string{"queue", "get", "research/train", "-o", "wide"}, "training-h100", ""},
		{[]string{"queue", "update", "research/train", "--pool", "training-h100,eu-spot"}, "queue/research/train updated", ""},
		{[]string{"queue", "get", "research/train", "-o", "yaml"}, "- eu-spot", ""},
		{[]string{"pool", "cordon", "training-h100"}, "gpupool/training-h100 cordoned (state Cordoned)", ""},
		{[]string{"pool", "drain", "training-h100"}, "gpupool/training-h100 draining (state Draining)", ""},
		{[]string{"pool", "undrain", "training-h100"}, "gpupool/training-h100 undrained (state Cordoned)", ""},
		{[]string{"pool", "uncordon", "training-h100"}, "gpupool/training-h100 uncordoned (state Ready)", ""},
		{[]string{"pool", "scale-to-zero", "eu-spot", "--off"}, "gpupool/eu-spot scale-to-zero off (state Ready)", ""},
		{[]string{"pool", "describe", "training-h100"}, "GPU products:       NVIDIA-H100-80GB-HBM3", ""},
		{[]string{"pool", "delete", "training-h100"}, "", "delete gpupool/training-h100: "},
		{[]string{"queue", "update", "research/train", "--pool="}, "queue/research/train updated", ""},
		{[]string{"pool", "delete", "training-h100", "eu-spot"}, "gpupool/eu-spot deleted", ""},
		{[]string{"pool", "get", "training-h100"}, "", "get gpupool/training-h100: "},
	} {
		out, err := shoal(t, config, "", step.args...)
		switch {
		case step.wantErr == "" && err != nil:
			t.Fatalf("shoal %s: %v\n%s", strings.Join(step.args, " "), err, out)
		case step.wantErr != "" && (err == nil || !strings.Contains(err.Error(), step.wantErr)):
			t.Fatalf("shoal %s: error %v, want %q\n%s", strings.Join(step.args, " "), err, step.wantErr, out)
		case !strings.Contains(out, step.wantOut):
			t.Fatalf("shoal %s printed\n%s\nwant %q", strings.Join(step.args, " "), out, step.wantOut)
		}
	}
}
