// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ReadyCheck is one named check of /readyz.
type ReadyCheck struct {
	// Name is shown by /readyz?verbose ("[+]name ok", "[-]name failed").
	Name string
	// Check says what it found, or why the replica is not ready.
	Check func(ctx context.Context) (string, error)
}

// readyTimeout bounds one /readyz request, all checks together.
const readyTimeout = 2 * time.Second

// Names of the server's own checks.
const (
	// CheckStore passes when the store answers a linearizable read.
	CheckStore = "store"
	// CheckAPI passes when the gRPC server accepts calls.
	CheckAPI = "api"
)

// readyChecks are the server's own checks, then Config.ReadyChecks.
func (s *Server) readyChecks() []ReadyCheck {
	own := []ReadyCheck{
		{Name: CheckStore, Check: func(ctx context.Context) (string, error) {
			rev, err := s.cfg.Store.Revision(ctx)
			if err != nil {
				return "", fmt.Errorf("store unreachable: %w", err)
			}
			return fmt.Sprintf("revision %d", rev), nil
		}},
		{Name: CheckAPI, Check: func(context.Context) (string, error) {
			select {
			case <-s.stopping:
				return "", errors.New("the gRPC server is stopping")
			default:
			}
			select {
			case <-s.ready:
				return "serving " + s.grpcLis.Addr().String(), nil
			default:
				return "", errors.New("the gRPC server is not serving yet")
			}
		}},
	}
	return append(own, s.cfg.ReadyChecks...)
}

// readyHandler serves /readyz: 200 when every check passes, 503 naming the
// first failure otherwise; ?verbose lists every check, one a line, as
// kube-apiserver does. Without detail (the plain probe address) the
// failures' reasons and the checks' findings are withheld.
func (s *Server) readyHandler(detail bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		_, verbose := r.URL.Query()["verbose"]
		var lines []string
		var failed []string
		for _, c := range s.readyChecks() {
			msg, err := c.Check(ctx)
			switch {
			case err != nil && detail:
				lines = append(lines, fmt.Sprintf("[-]%s failed: %v", c.Name, err))
				failed = append(failed, c.Name+": "+err.Error())
			case err != nil:
				lines = append(lines, fmt.Sprintf("[-]%s failed: reason withheld", c.Name))
				failed = append(failed, c.Name)
			case detail && msg != "":
				lines = append(lines, fmt.Sprintf("[+]%s ok: %s", c.Name, msg))
			default:
				lines = append(lines, fmt.Sprintf("[+]%s ok", c.Name))
			}
		}
		code, summary := http.StatusOK, "ok"
		if len(failed) > 0 {
			code, summary = http.StatusServiceUnavailable, "not ready"
			if detail {
				summary += ": " + strings.Join(failed, "; ")
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(code)
		if verbose {
			lines = append(lines, "readyz check "+map[bool]string{true: "passed", false: "failed"}[len(failed) == 0])
			_, _ = fmt.Fprintln(w, strings.Join(lines, "\n"))
			return
		}
		_, _ = fmt.Fprintln(w, summary)
	})
}
