// SPDX-License-Identifier: Apache-2.0

package store_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/store"
)

// crashDirEnv makes the test binary run crashWriter instead of the tests.
const crashDirEnv = "SHOAL_STORE_CRASH_DIR"

func init() {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		os.Exit(crashWriter(dir))
	}
}

// crashWriter creates jobs from 8 goroutines in an embedded store at dir and
// prints the name of every acknowledged one, until it is killed.
func crashWriter(dir string) int {
	s, err := store.Open(context.Background(), store.Config{DataDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c := store.NewCollection(s, "jobs", store.JSONCodec[testObj]())
	var mu sync.Mutex
	var seq atomic.Int64
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				name := fmt.Sprintf("job-%06d", seq.Add(1))
				if _, err := c.Create(context.Background(), name, testObj{Spec: strings.Repeat("x", 2000)}); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return
				}
				mu.Lock()
				fmt.Fprintln(out, name)
				_ = out.Flush()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return 1
}

// TestAcknowledgedWritesSurviveSIGKILL kills a process that writes to an
// embedded store while 8 writers are in flight; after a restart every
// acknowledged object is there, whole.
func TestAcknowledgedWritesSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs and kills a writer process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]bool{}
	sc := bufio.NewScanner(stdout)
	for len(acked) < 1000 && sc.Scan() {
		acked[sc.Text()] = true
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() { // acknowledgements printed before the kill landed
		acked[sc.Text()] = true
	}
	_ = cmd.Wait()
	if len(acked) < 1000 {
		t.Fatalf("writer acknowledged only %d jobs before exiting", len(acked))
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := store.Open(ctx, store.Config{DataDir: dir})
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer func() { _ = s.Close() }()
	res, err := store.NewCollection(s, "jobs", store.JSONCodec[testObj]()).List(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err) // a half-written value would fail to decode here
	}
	stored := map[string]bool{}
	for _, it := range res.Items {
		if len(it.Object.Spec) != 2000 {
			t.Errorf("%s: value of %d bytes, want 2000", it.Name, len(it.Object.Spec))
		}
		stored[it.Name] = true
	}
	for name := range acked {
		if !stored[name] {
			t.Errorf("acknowledged %s lost", name)
		}
	}
	t.Logf("%d acknowledged, %d stored (the rest were in flight)", len(acked), len(stored))
}
