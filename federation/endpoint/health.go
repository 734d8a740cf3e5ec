// SPDX-License-Identifier: Apache-2.0

package endpoint

import (
	"context"
	"net/http"
	"time"
)

// Check is a readiness check; its error is shown only on the
// authenticated endpoint.
type Check func(ctx context.Context) error

// HealthHandler serves /healthz (the process runs) and, with a ready
// check, /readyz (ready, or 503), and nothing else. With detail the
// /readyz error text is shown; without (the plain probe address) only
// "not ready".
func HealthHandler(ready Check, detail bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	if ready == nil {
		return mux
	}
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := ready(ctx); err != nil {
			msg := "not ready"
			if detail {
				msg += ": " + err.Error()
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}
