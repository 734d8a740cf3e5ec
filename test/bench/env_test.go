// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/internal/devfleet"
)

// upFleet starts a fleet, again when a port it picked was taken before it
// bound it (another fleet on the machine).
func upFleet(b *testing.B, o devfleet.Options) *devfleet.Fleet {
	b.Helper()
	var f *devfleet.Fleet
	var err error
	for range 3 {
		f, err = devfleet.Up(b.Context(), o)
		if err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
		b.Logf("fleet start, again: %v", err)
	}
	if err != nil {
		b.Fatal(err)
	}
	return f
}

// runCLI runs the shoal CLI with the fleet's config.
func runCLI(b *testing.B, cli, config string, args ...string) string {
	b.Helper()
	out, err := exec.CommandContext(b.Context(), cli, append([]string{"--config", config}, args...)...).CombinedOutput()
	if err != nil {
		b.Fatalf("shoal %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// envSizes is the comma-separated list of positive numbers in the
// variable name: def when it is unset, none when it is set empty.
func envSizes(b *testing.B, name, def string) []int {
	v, ok := os.LookupEnv(name)
	if !ok {
		v = def
	}
	if strings.TrimSpace(v) == "" {
		return nil
	}
	var sizes []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			b.Fatalf("%s: %q is not a positive number", name, s)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return n
}

func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return d
}
