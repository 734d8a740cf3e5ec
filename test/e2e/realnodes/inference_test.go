// SPDX-License-Identifier: Apache-2.0

package realnodes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// serviceManifest is an InferenceService of the trainer's serve mode with
// a readiness probe, min..max replicas of one GPU, spread over clusters.
func serviceManifest(name, model string, min, max int) string {
	return fmt.Sprintf(`apiVersion: shoal.dev/v1alpha1
kind: InferenceService
metadata:
  name: %s
spec:
  queue: realnodes-serve
  model: %s
  replicas: {min: %d, max: %d}
  gpusPerMember: 1
  port: 8000
  autoscaling:
    targetPerReplica: 4
    scaleDownDelaySeconds: 5
    metric: {name: shoal_requests_in_flight}
  rollout: {progressDeadlineSeconds: 40}
  template:
    spec:
%s`, name, model, min, max, container(devfleet.TrainerImage, []string{"serve", "--port", "8000", "--fail-model", "broken"},
		`        readinessProbe:
          httpGet: {path: /healthz, port: 8000}
          periodSeconds: 1
`, ""))
}

// TestInferenceServiceServesHTTPAcrossClusters: an InferenceService on the
// real-node fleet serves HTTP from real containers in both clusters,
// reached at the addresses of the fleet endpoint list; load steps reported
// by a gateway add replicas (the time from the step to the new replica
// ready is logged, the figure docs/inference.md quotes), and requests held
// in flight, read by the agents from the replicas' metric, add one too; a
// rollout to a new model version completes and the endpoints answer with
// it; a version whose server exits at start is rolled back, the previous
// one still answering.
func TestInferenceServiceServesHTTPAcrossClusters(t *testing.T) {
	if testing.Short() {
		t.Skip("real containers")
	}
	if out, err := shoalCLI(t, "", "queue", "create", "realnodes-serve"); err != nil && !strings.Contains(out, "already exists") {
		t.Fatalf("queue create: %v\n%s", err, out)
	}
	for _, v := range []string{"1.0", "2.0", "3.0-broken"} {
		out, err := shoalCLI(t, "", "model", "register", "--model", "rn-chat", "--version", v, "--artifact", "s3://models/rn-chat/"+v,
			"--digest", "sha256:"+strings.Repeat("cd", 32), "--framework", "pytorch")
		if err != nil && !strings.Contains(out, "exists") {
			t.Fatalf("model register %s: %v\n%s", v, err, out)
		}
	}
	mustCLI(t, serviceManifest("rn-chat", "rn-chat@1.0", 2, 4), "service", "create", "-f", "-")
	t.Cleanup(func() { _, _ = shoalCLI(t, "", "service", "delete", "rn-chat") })

	s := waitServing(t, "rn-chat", 3*time.Minute, "2 replicas ready in 2 clusters", func(s *v1alpha1.InferenceService) bool {
		return s.Status.ReadyReplicas == 2 && len(readyClusters(s)) == 2
	})
	for _, e := range readyEndpoints(s) {
		if got := ask(t, e); got.Model != "rn-chat@1.0" || got.Service != "rn-chat" {
			t.Fatalf("%s at %s:%d answered %+v, want rn-chat@1.0", e.Replica, e.Address, e.Port, got)
		}
	}
	t.Logf("rn-chat serves from %v", readyClusters(s))

	// Load steps reported by a gateway: 2 → 3 replicas, timed to ready.
	var steps []time.Duration
	for i := range 5 {
		start := time.Now()
		mustCLI(t, "", "service", "load", "rn-chat", "12")
		waitServing(t, "rn-chat", 2*time.Minute, "3 ready after a load step", func(s *v1alpha1.InferenceService) bool {
			return s.Status.ReadyReplicas == 3
		})
		steps = append(steps, time.Since(start))
		t.Logf("load step %d: 3rd replica ready %s after the report", i+1, steps[i].Round(10*time.Millisecond))
		mustCLI(t, "", "service", "load", "rn-chat", "0")
		waitServing(t, "rn-chat", time.Minute, "back to 2 replicas", func(s *v1alpha1.InferenceService) bool {
			return s.Status.Replicas == 2 && s.Status.DesiredReplicas == 2
		})
	}
	slices.Sort(steps)
	t.Logf("load step → new replica ready: p50 %s, max %s over %d steps (gateway reports)",
		steps[len(steps)/2].Round(10*time.Millisecond), steps[len(steps)-1].Round(10*time.Millisecond), len(steps))

	// Requests held in flight: the agents read them from the replicas'
	// metric and report them; 10 in flight at 4 per replica asks for 3.
	s = waitServing(t, "rn-chat", 30*time.Second, "2 ready", func(s *v1alpha1.InferenceService) bool { return s.Status.ReadyReplicas == 2 })
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	eps := readyEndpoints(s)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := eps[i%len(eps)]
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/?hold=90s", net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port)))), nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		}()
	}
	start := time.Now()
	s = waitServing(t, "rn-chat", 2*time.Minute, "3 ready on the agents' in-flight reports", func(s *v1alpha1.InferenceService) bool {
		return s.Status.ReadyReplicas == 3 && agentReported(s)
	})
	t.Logf("10 requests in flight → 3rd replica ready %s later (agents read the metric every 5 s); load %+v",
		time.Since(start).Round(10*time.Millisecond), s.Status.Load)
	cancel()
	wg.Wait()

	// A rollout to 2.0: every endpoint answers with it.
	mustCLI(t, "", "service", "set-model", "rn-chat", "rn-chat@2.0")
	s = waitServing(t, "rn-chat", 3*time.Minute, "rollout to 2.0 complete", func(s *v1alpha1.InferenceService) bool {
		return s.Status.Model == "rn-chat@2.0" && s.Status.Rollout != nil && s.Status.Rollout.Phase == v1alpha1.ServiceRolloutComplete &&
			len(readyEndpoints(s)) >= 2 && len(readyEndpoints(s)) == len(s.Status.Endpoints)
	})
	for _, e := range readyEndpoints(s) {
		if got := ask(t, e); got.Model != "rn-chat@2.0" {
			t.Fatalf("%s answered %+v after the rollout, want rn-chat@2.0", e.Replica, got)
		}
	}

	// A version whose server exits at start: rolled back, 2.0 answering.
	mustCLI(t, "", "service", "set-model", "rn-chat", "rn-chat@3.0-broken")
	s = waitServing(t, "rn-chat", 3*time.Minute, "rollout to 3.0-broken rolled back", func(s *v1alpha1.InferenceService) bool {
		return s.Status.Rollout != nil && s.Status.Rollout.To == "rn-chat@3.0-broken" && s.Status.Rollout.Phase == v1alpha1.ServiceRolloutRolledBack
	})
	t.Logf("%s", s.Status.Rollout.Message)
	s = waitServing(t, "rn-chat", time.Minute, "only 2.0 replicas, 2 ready", func(s *v1alpha1.InferenceService) bool {
		return s.Status.Model == "rn-chat@2.0" && s.Status.ReadyReplicas >= 2 && len(readyEndpoints(s)) == len(s.Status.Endpoints)
	})
	for _, e := range readyEndpoints(s) {
		if got := ask(t, e); got.Model != "rn-chat@2.0" {
			t.Fatalf("%s answered %+v after the rollback, want rn-chat@2.0", e.Replica, got)
		}
	}
	out := mustCLI(t, "", "service", "endpoints", "rn-chat", "--ready")
	for _, e := range readyEndpoints(s) {
		if !strings.Contains(out, e.Address) {
			t.Fatalf("shoal service endpoints does not list %s:\n%s", e.Address, out)
		}
	}
}

// answer is what the serve mode answers on /.
type answer struct {
	Model   string `json:"model"`
	Service string `json:"service"`
	Pod     string `json:"pod"`
}

// ask GETs / of an endpoint from this host, through the clusters' pod
// networks.
func ask(t *testing.T, e v1alpha1.ServiceEndpoint) answer {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://%s/", net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port)))))
	if err != nil {
		t.Fatalf("GET %s of %s: %v", e.Address, e.Replica, err)
	}
	defer func() { _ = resp.Body.Close() }()
	var a answer
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&a) != nil {
		t.Fatalf("GET %s of %s: %s", e.Address, e.Replica, resp.Status)
	}
	return a
}

// getService reads a service through the CLI.
func getService(t *testing.T, name string) (*v1alpha1.InferenceService, error) {
	out, err := shoalCLI(t, "", "service", "get", name, "-o", "json")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	var s v1alpha1.InferenceService
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	return &s, nil
}

func waitServing(t *testing.T, name string, timeout time.Duration, what string, ok func(*v1alpha1.InferenceService) bool) *v1alpha1.InferenceService {
	t.Helper()
	var last *v1alpha1.InferenceService
	poll(t, timeout, what, func() (bool, error) {
		s, err := getService(t, name)
		if err != nil {
			return false, err
		}
		last = s
		b, _ := json.Marshal(s.Status)
		return ok(s), fmt.Errorf("status %s", b)
	})
	return last
}

func readyEndpoints(s *v1alpha1.InferenceService) []v1alpha1.ServiceEndpoint {
	var out []v1alpha1.ServiceEndpoint
	for _, e := range s.Status.Endpoints {
		if e.Ready {
			out = append(out, e)
		}
	}
	return out
}

func readyClusters(s *v1alpha1.InferenceService) []string {
	var out []string
	for _, e := range readyEndpoints(s) {
		if !slices.Contains(out, e.Cluster) {
			out = append(out, e.Cluster)
		}
	}
	slices.Sort(out)
	return out
}

func agentReported(s *v1alpha1.InferenceService) bool {
	if s.Status.Load == nil {
		return false
	}
	for _, src := range s.Status.Load.Sources {
		if strings.HasPrefix(src.Source, "agent:") && src.Value > 0 {
			return true
		}
	}
	return false
}
