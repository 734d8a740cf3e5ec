// SPDX-License-Identifier: Apache-2.0

package hub

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// schedulerLeading reports whether the hub's /readyz?verbose says it leads
// the scheduler election and has completed a cycle.
func (h *hubProc) schedulerLeading() bool {
	resp, err := http.Get("http://" + h.httpAddr + "/readyz?verbose")
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return strings.Contains(string(b), "[+]scheduler-leader ok: leading")
}

// TestRestartAfterSIGKILLLeadsAtOnce: a hub killed while it leads used to
// wait out its own previous process's campaign keys (the election TTL,
// renewed by the embedded etcd's restart) before it scheduled again. With
// a 30 s TTL the restarted process now leads within seconds: it revokes the
// election sessions its predecessor recorded in the data directory.
func TestRestartAfterSIGKILLLeadsAtOnce(t *testing.T) {
	const ttl = 30 * time.Second
	h := startHub(t, "--election-ttl", ttl.String())
	waitFor(t, 30*time.Second, "the first process leads", h.schedulerLeading)
	h.kill()
	start := time.Now()
	h.start()
	waitFor(t, ttl, "the restarted process leads", h.schedulerLeading)
	took := time.Since(start)
	t.Logf("restart after SIGKILL -> leading the scheduler after %s (election TTL %s)", took.Round(10*time.Millisecond), ttl)
	if took > ttl/2 {
		t.Fatalf("the restarted hub led after %s, as if it waited for its old lease (TTL %s)", took, ttl)
	}
	if !strings.Contains(h.log.String(), "Revoked the election sessions of this replica's previous process") {
		t.Errorf("the restart did not revoke the previous sessions:\n%s", h.log)
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
