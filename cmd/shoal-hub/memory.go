// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
)

// addMemoryFlag adds --memory-limit.
func addMemoryFlag(fs *pflag.FlagSet, limit *string) {
	fs.StringVar(limit, "memory-limit", "", "soft limit of the hub's Go memory, a quantity such as 1400Mi: near it the collector runs more often instead of letting the heap grow to twice its live data; "+
		"default: the GOMEMLIMIT environment variable (the shipped manifests set it to the container's memory limit), else none. "+
		"Set below the live data, the collector runs all the time (docs/scale.md, \"Memory\")")
}

// applyMemoryLimit sets the Go collector's soft memory limit from
// --memory-limit; empty leaves the runtime's (GOMEMLIMIT, or none).
func applyMemoryLimit(s string) error {
	if s == "" {
		return nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return fmt.Errorf("--memory-limit %q: want a positive quantity such as 1400Mi", s)
	}
	debug.SetMemoryLimit(q.Value())
	return nil
}
