// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
)

// The tracing flags are checked before anything starts, naming the flag.
func TestTracingFlagsRefused(t *testing.T) {
	for args, want := range map[string]string{
		"--tracing-sampling-ratio=2": "--tracing-sampling-ratio",
		"--tracing-insecure":         "need --tracing-endpoint",
		"--tracing-endpoint=c:4317 --tracing-ca=x --tracing-insecure": "exclude each other",
	} {
		cmd := newCommand()
		cmd.SetArgs(strings.Fields(args))
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", args, err, want)
		}
	}
}
