// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-dev/shoal/internal/devfleet"
)

// Gang is one shape of the job mix: Members × GPUs whole GPUs, drawn with
// weight Weight.
type Gang struct {
	Members, GPUs int32
	Weight        int
}

// Config is one harness run.
type Config struct {
	// Clusters simulated clusters of Nodes nodes each; the profiles of
	// Profiles (default devfleet.DefaultProfiles) in turn, as `shoal dev`.
	Clusters, Nodes int
	Profiles        []string
	// Jobs are submitted, Rate a second (0: as fast as Submitters go) by
	// Submitters concurrent clients (default 16).
	Jobs       int
	Rate       float64
	Submitters int
	// Gangs is the job mix, drawn in turn by weight (default DefaultGangs).
	Gangs []Gang
	// RunMin and RunMax bound each job's run time (spread evenly by job
	// index; default 2 s and 6 s).
	RunMin, RunMax time.Duration
	// WaitFinished waits for every job to succeed (the harness test);
	// otherwise the run ends Hold after the last submission.
	WaitFinished bool
	Hold         time.Duration
	// Timeout bounds the wait for the jobs (default 10 minutes).
	Timeout time.Duration
	// InventoryProbes is the number of inventory changes timed (default 10).
	InventoryProbes int
	// CPUProfile, when positive, records a CPU profile of the hub for
	// that long from the first submission (the hub runs with --profiling)
	// into ProfileFile.
	CPUProfile  time.Duration
	ProfileFile string
	// HeapProfile, when set, records a heap profile of the hub at the end
	// of the load, after a forced collection, into HeapProfileFile.
	HeapProfile     bool
	HeapProfileFile string
	// HubBinary is shoal-hub; HubArgs extra flags for it, HubEnv
	// variables added to its environment (KEY=VALUE).
	HubBinary string
	HubArgs   []string
	HubEnv    []string
	// Dir holds the hub's data and logs.
	Dir string
}

// DefaultGangs is the default job mix: mostly small gangs, some of 8 and
// 16 members. Every shape fits one cluster of 20 nodes of every default
// profile but the 16 × 8 gang, which only HGX H100 clusters (8 GPUs a
// node) hold.
var DefaultGangs = []Gang{{Members: 1, GPUs: 1, Weight: 8}, {Members: 2, GPUs: 1, Weight: 4}, {Members: 4, GPUs: 2, Weight: 3},
	{Members: 8, GPUs: 2, Weight: 2}, {Members: 8, GPUs: 4, Weight: 1}, {Members: 16, GPUs: 8, Weight: 1}}

func (c *Config) defaults() error {
	if len(c.Profiles) == 0 {
		c.Profiles = devfleet.DefaultProfiles
	}
	for _, p := range c.Profiles {
		if _, err := devfleet.LookupProfile(p); err != nil {
			return err
		}
	}
	if c.Clusters <= 0 || c.Nodes <= 0 || c.Jobs < 0 {
		return fmt.Errorf("scale: clusters (%d) and nodes (%d) must be positive, jobs (%d) not negative", c.Clusters, c.Nodes, c.Jobs)
	}
	if c.Submitters == 0 {
		c.Submitters = 16
	}
	if len(c.Gangs) == 0 {
		c.Gangs = DefaultGangs
	}
	if c.RunMin == 0 {
		c.RunMin = 2 * time.Second
	}
	if c.RunMax < c.RunMin {
		c.RunMax = c.RunMin + 4*time.Second
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.InventoryProbes == 0 {
		c.InventoryProbes = 10
	}
	if c.HubBinary == "" || c.Dir == "" {
		return fmt.Errorf("scale: the shoal-hub binary and a directory are required")
	}
	return nil
}

// FromEnv reads the knobs of make bench-scale: SCALE_CLUSTERS,
// SCALE_NODES, SCALE_JOBS, SCALE_RATE, SCALE_SUBMITTERS, SCALE_RUN_MIN,
// SCALE_RUN_MAX, SCALE_HOLD, SCALE_TIMEOUT, SCALE_PROFILES (comma
// separated), SCALE_WAIT (1: wait for every job to finish),
// SCALE_CPU_PROFILE (a duration: record a CPU profile of the hub that long
// from the first submission), SCALE_HEAP_PROFILE (1: a heap profile of the
// hub at the end), SCALE_HUB_ARGS and SCALE_HUB_ENV (KEY=VALUE ...,
// added to the hub's environment, e.g. GOMAXPROCS=4). Defaults: F-XL
// (100 clusters × 1,000 nodes of hgx-h100, 8 GPUs each; 100,000 jobs of
// an hour each, as fast as they go in, held 2 minutes).
func FromEnv() (Config, error) {
	c := Config{Clusters: 100, Nodes: 1000, Jobs: 100000, Profiles: []string{"hgx-h100"},
		RunMin: time.Hour, RunMax: time.Hour, Hold: 2 * time.Minute, Timeout: 4 * time.Hour}
	var errs []string
	num := func(k string, into *int) {
		if v := os.Getenv(k); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, k+": "+err.Error())
			}
			*into = n
		}
	}
	dur := func(k string, into *time.Duration) {
		if v := os.Getenv(k); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, k+": "+err.Error())
			}
			*into = d
		}
	}
	num("SCALE_CLUSTERS", &c.Clusters)
	num("SCALE_NODES", &c.Nodes)
	num("SCALE_JOBS", &c.Jobs)
	num("SCALE_SUBMITTERS", &c.Submitters)
	if v := os.Getenv("SCALE_RATE"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil {
			errs = append(errs, "SCALE_RATE: "+err.Error())
		}
		c.Rate = r
	}
	dur("SCALE_RUN_MIN", &c.RunMin)
	dur("SCALE_RUN_MAX", &c.RunMax)
	dur("SCALE_HOLD", &c.Hold)
	dur("SCALE_TIMEOUT", &c.Timeout)
	dur("SCALE_CPU_PROFILE", &c.CPUProfile)
	if v := os.Getenv("SCALE_PROFILES"); v != "" {
		c.Profiles = strings.Split(v, ",")
	}
	c.WaitFinished = os.Getenv("SCALE_WAIT") == "1"
	c.HubArgs = strings.Fields(os.Getenv("SCALE_HUB_ARGS"))
	c.HubEnv = strings.Fields(os.Getenv("SCALE_HUB_ENV"))
	for _, kv := range c.HubEnv {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			errs = append(errs, "SCALE_HUB_ENV: "+kv+" is not KEY=VALUE")
		}
	}
	c.HeapProfile = os.Getenv("SCALE_HEAP_PROFILE") == "1"
	if c.CPUProfile > 0 || c.HeapProfile {
		c.HubArgs = append(c.HubArgs, "--profiling")
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("scale knobs: %s", strings.Join(errs, "; "))
	}
	return c, nil
}
