// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"

	dto "github.com/prometheus/client_model/go"
)

// Heap is the hub's Go heap at the end of the load, from its /metrics (the
// Go collector's gauges), in MiB: what the resident memory is made of.
type Heap struct {
	// AllocMiB is the heap's live and not yet collected objects; InuseMiB
	// the spans holding them; SysMiB all the runtime took from the system.
	AllocMiB float64 `json:"allocMiB"`
	InuseMiB float64 `json:"inuseMiB"`
	SysMiB   float64 `json:"sysMiB"`
	// LiveMiB is the heap right after a collection the harness forced
	// (SCALE_HEAP_PROFILE, with the profile): the live data alone.
	LiveMiB float64 `json:"liveMiB,omitempty"`
}

// heapOf reads the Go collector's heap gauges of a scrape.
func heapOf(fams map[string]*dto.MetricFamily) Heap {
	g := func(name string) float64 {
		for _, m := range fams[name].GetMetric() {
			return mib(int64(m.GetGauge().GetValue()))
		}
		return 0
	}
	return Heap{AllocMiB: g("go_memstats_heap_alloc_bytes"), InuseMiB: g("go_memstats_heap_inuse_bytes"),
		SysMiB: g("go_memstats_sys_bytes")}
}

// heapProfile writes the hub's heap profile, taken after a forced
// collection (/debug/pprof/heap?gc=1, served with --profiling), to file,
// and returns the live heap read right after it.
func (h *Harness) heapProfile(ctx context.Context, file string) (float64, error) {
	if err := fetchTo(ctx, h.Hub.Fleet.Shoal.HTTP+"/debug/pprof/heap?gc=1", file); err != nil {
		return 0, err
	}
	fams, err := scrape(ctx, h.Hub.Fleet.Shoal.HTTP+"/metrics")
	if err != nil {
		return 0, err
	}
	return heapOf(fams).AllocMiB, nil
}

// fetchTo writes the body of a GET of url (a profile the hub serves with
// --profiling) to file.
func fetchTo(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}
