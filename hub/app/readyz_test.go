// SPDX-License-Identifier: Apache-2.0

package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/app"
	"github.com/shoal-dev/shoal/hub/store"
)

// TestReadyzNamesItsChecks: /readyz?verbose lists the store, api and
// scheduler-leader checks; once the replica leads and has completed a
// cycle the scheduler check says so, and /readyz answers ok.
func TestReadyzNamesItsChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded etcd")
	}
	dir := t.TempDir()
	ports := make([]int, 2)
	for i := range ports {
		p, err := store.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	cfg := app.DefaultConfig()
	cfg.DataDir, cfg.Listen = dir, fmt.Sprintf("127.0.0.1:%d", ports[0])
	cfg.HTTPListen = fmt.Sprintf("127.0.0.1:%d", ports[1])
	cfg.AdminConfig, cfg.Identity = filepath.Join(dir, "config"), "hub-ready"
	cfg.ElectionTTL, cfg.Embedded.UnsafeNoFsync = time.Second, true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := app.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = h.Run(ctx) }()
	defer func() { cancel(); <-h.Done() }()
	<-h.Ready()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + cfg.HTTPListen + path)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var body string
	for deadline := time.Now().Add(30 * time.Second); ; {
		var code int
		code, body = get("/readyz?verbose")
		if code == http.StatusOK && strings.Contains(body, "[+]"+app.CheckSchedulerLeader+" ok: leading since revision") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz?verbose never showed a synced scheduler leader: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []string{"[+]store ok: revision ", "[+]api ok: serving " + cfg.Listen, "readyz check passed"} {
		if !strings.Contains(body, want) {
			t.Errorf("/readyz?verbose lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, app.CheckDispatchSynced) {
		t.Errorf("a hub without a hub cluster runs no dispatcher, yet /readyz lists %s:\n%s", app.CheckDispatchSynced, body)
	}
	if code, body := get("/readyz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/readyz = %d %q, want 200 ok", code, body)
	}
}
