// SPDX-License-Identifier: Apache-2.0

package simtrace

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/sim"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// testdata is the simulator's testdata directory, where the trace lives.
var testdata = filepath.Join("..", "..", "..", "federation", "sim", "testdata")

// loadTrace reads the fleet, mapping and workload files of the test trace.
func loadTrace(t *testing.T) *sim.Trace {
	t.Helper()
	open := func(name string) *os.File {
		f, err := os.Open(filepath.Join(testdata, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		return f
	}
	fleet, err := sim.ReadFleet(open("simtrace-fleet.csv"), sim.FormatCSV)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sim.ReadMapping(open("simtrace-mapping.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	jobs, skipped, err := sim.ReadWorkload(open("simtrace-jobs.csv"), m, fleet)
	if err != nil || skipped != 0 {
		t.Fatalf("workload: %v (%d rows skipped)", err, skipped)
	}
	return &sim.Trace{Name: "simtrace", Clusters: fleet, Jobs: jobs}
}

// buildShoal builds shoal-hub and shoal-agent from this checkout, unless
// $SHOAL_HUB_BIN and $SHOAL_AGENT_BIN name binaries already built.
func buildShoal(t *testing.T) *devfleet.ShoalOptions {
	t.Helper()
	if hub, agent := os.Getenv("SHOAL_HUB_BIN"), os.Getenv("SHOAL_AGENT_BIN"); hub != "" && agent != "" {
		return &devfleet.ShoalOptions{HubBinary: hub, AgentBinary: agent}
	}
	out := t.TempDir()
	cmd := exec.Command("go", "build", "-o", out+"/", "./cmd/shoal-hub", "./cmd/shoal-agent")
	cmd.Dir = filepath.Join("..", "..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return &devfleet.ShoalOptions{HubBinary: filepath.Join(out, "shoal-hub"), AgentBinary: filepath.Join(out, "shoal-agent")}
}

// dialHub connects to the fleet's hub as the admin shoal-hub wrote into the
// fleet's CLI config, as the shoal CLI does.
func dialHub(t *testing.T, config string) *grpc.ClientConn {
	t.Helper()
	cfg, err := configv1alpha1.Load(config)
	if err != nil {
		t.Fatal(err)
	}
	hctx, err := cfg.Context(devfleet.ShoalContext)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := hctx.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(hctx.Hub, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func object(t *testing.T, v any) *shoalv1.Object {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &shoalv1.Object{Json: b}
}

// checkFleetMatches fails unless every workload cluster's nodes are the
// fleet file's: names, allocatable GPUs, product, rack and block.
func checkFleetMatches(t *testing.T, f *devfleet.Fleet, want []inventory.Cluster) {
	t.Helper()
	got := map[string][]string{}
	for _, c := range f.Workloads() {
		cs, err := c.Clientset()
		if err != nil {
			t.Fatal(err)
		}
		l, err := cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range l.Items {
			gpus := n.Status.Allocatable[corev1.ResourceName(v1alpha1.ResourceGPU)]
			got[c.Name] = append(got[c.Name], fmt.Sprintf("%s %d %s %s %s", n.Name, gpus.Value(),
				n.Labels[devfleet.LabelGPUProduct], n.Labels[devfleet.LabelRack], n.Labels[devfleet.LabelBlock]))
		}
	}
	for _, c := range want {
		var lines []string
		for _, n := range c.Nodes {
			lines = append(lines, fmt.Sprintf("%s %d %s %s %s", n.Name, n.GPUs, n.Product, n.Rack, n.Block))
		}
		if g, w := strings.Join(got[c.Name], "\n"), strings.Join(lines, "\n"); g != w {
			t.Fatalf("cluster %s on the fleet:\n%s\nin %s/simtrace-fleet.csv:\n%s", c.Name, g, testdata, w)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("fleet has clusters %v, the fleet file %d", got, len(want))
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
