// SPDX-License-Identifier: Apache-2.0

package upgrade_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/shoal-dev/shoal/internal/devfleet"
)

// repoRoot is this checkout's root, from the package directory.
var repoRoot = filepath.Join("..", "..", "..")

// previousBinaries returns shoal-hub and shoal-agent built at commit,
// cached under $SHOAL_CACHE/upgrade/<commit>/ so that only the first run on
// a machine builds them (a few minutes on two cores). The source comes
// from this checkout's Git history (git archive) and the dependencies from
// the module cache, or the module proxy for those of its versions the
// cache lacks (the previous release's go.sum checks them).
func previousBinaries(t *testing.T, commit string) *devfleet.ShoalOptions {
	t.Helper()
	dir := filepath.Join(devfleet.CacheDir(), "upgrade", commit)
	// The previous release has no REST face (--rest-listen).
	bins := &devfleet.ShoalOptions{HubBinary: filepath.Join(dir, "shoal-hub"), AgentBinary: filepath.Join(dir, "shoal-agent"), NoREST: true}
	if executable(bins.HubBinary) && executable(bins.AgentBinary) {
		return bins
	}
	t.Logf("building shoal-hub and shoal-agent at %s into %s (once per machine)", commit[:7], dir)
	if err := buildCommit(commit, dir); err != nil {
		t.Fatal(err)
	}
	return bins
}

func buildCommit(commit, dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	src, out := filepath.Join(work, "src"), filepath.Join(work, "bin")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	archive := exec.Command("sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "sh", repoRoot, commit, src)
	if b, err := archive.CombinedOutput(); err != nil {
		return fmt.Errorf("extract commit %s from the Git history (a shallow clone lacks it: git fetch --unshallow): %w\n%s", commit, err, b)
	}
	// No -trimpath: it would miss the build cache of every dependency
	// (their cache keys include the flag) and compile them all again, some
	// fifteen minutes on a busy two-core machine instead of about one.
	build := exec.Command("go", "build", "-o", out+string(filepath.Separator), "./cmd/shoal-hub", "./cmd/shoal-agent")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build at %s: %w\n%s", commit, err, b)
	}
	// Another test binary may have finished the same build meanwhile.
	if err := os.Rename(out, dir); err != nil && !executable(filepath.Join(dir, "shoal-agent")) {
		return err
	}
	return nil
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

var (
	currentOnce sync.Once
	currentBins *devfleet.ShoalOptions
	currentErr  error
)

// currentBinaries builds shoal-hub and shoal-agent from this checkout, once
// per test binary.
func currentBinaries(t *testing.T) *devfleet.ShoalOptions {
	t.Helper()
	currentOnce.Do(func() {
		out, err := os.MkdirTemp("", "shoal-upgrade-bin-")
		if err != nil {
			currentErr = err
			return
		}
		cmd := exec.Command("go", "build", "-o", out+string(filepath.Separator), "./cmd/shoal-hub", "./cmd/shoal-agent")
		cmd.Dir = repoRoot
		if b, err := cmd.CombinedOutput(); err != nil {
			currentErr = fmt.Errorf("go build: %w\n%s", err, b)
			return
		}
		currentBins = &devfleet.ShoalOptions{HubBinary: filepath.Join(out, "shoal-hub"), AgentBinary: filepath.Join(out, "shoal-agent")}
	})
	if currentErr != nil {
		t.Fatal(currentErr)
	}
	return currentBins
}
