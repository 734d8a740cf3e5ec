// SPDX-License-Identifier: Apache-2.0

package webui_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser is one headless Chromium tab.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

// startBrowser launches Chromium with a fresh profile and the flags that
// keep it off the network except for the pages it is sent to.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true), chromedp.WindowSize(1440, 900),
	}
	// Chromium sometimes crashes while it starts on a loaded machine (CI saw
	// one crash at launch, before any page): that is the browser, not the
	// view under test, so a start is tried up to three times.
	var ctx context.Context
	for attempt := 1; ; attempt++ {
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(opts, chromedp.UserDataDir(t.TempDir()))...)
		c, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
		err := chromedp.Do(c) // starts the browser
		if err == nil {
			ctx = c
			t.Cleanup(func() { cancel(); cancelAlloc() })
			break
		}
		cancel()
		cancelAlloc()
		if attempt == 3 {
			t.Fatalf("start %s (%d attempts): %v", chromium, attempt, err)
		}
		t.Logf("start %s, attempt %d: %v; trying again", chromium, attempt, err)
	}
	dir := *screenshots
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "shoal-webui-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return &browser{t: t, ctx: ctx, shots: dir}
}

// with is the browser reporting to t (a subtest).
func (b *browser) with(t *testing.T) *browser {
	c := *b
	c.t = t
	return &c
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatal(err)
	}
}

// eval runs a script on the page and decodes its value.
func eval[T any](b *browser, js string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](js))
}

// waitShows evaluates js until check accepts what the page shows (the
// pages refresh every 5 s and follow the watch), failing after 60 s with
// the last disagreement.
func waitShows[T any](b *browser, what, js string, check func(T) error) T {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, err := eval[T](b, js)
		if err == nil {
			if err = check(v); err == nil {
				return v
			}
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: %v (page shows %+v)", what, err, v)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// shot saves a full-page PNG of the current page as name.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	time.Sleep(200 * time.Millisecond) // the render after the last change is one frame away
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// startUIProxy runs `shoal ui` on a free loopback port with the fleet's
// admin configuration and returns the address it prints.
func startUIProxy(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(bins, "shoal"), "--config", env.Shoal.Config, "ui", "--listen", "127.0.0.1:0", "--rest-url", env.Shoal.REST)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		t.Fatalf("shoal ui printed %q (%v), want its address", line, err)
	}
	return strings.TrimSpace(line)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func equal[T comparable](what string, got, want T) error {
	if got != want {
		return fmt.Errorf("%s: page %v, API %v", what, got, want)
	}
	return nil
}
