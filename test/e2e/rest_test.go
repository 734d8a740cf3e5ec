// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/app"
	"github.com/shoal-dev/shoal/hub/pki"
)

// pyRuns counts the runs of TestPythonFollowsAGangOnTheFleet.
var pyRuns atomic.Int32

// TestPythonFollowsAGangOnTheFleet: the Python client (clients/python),
// over the REST face of an API-only hub replica, submits a two-member gang
// to the KWOK fleet and follows it: Pending, then Running (through Placed
// when the watch sees it), and after the cancel at Running, Cancelled,
// where follow ends.
func TestPythonFollowsAGangOnTheFleet(t *testing.T) {
	skipShort(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed (hack/host-deps.sh installs it): the Python client is not tested")
	}
	cfg, err := h.config([]string{h.st.ClientURL()}) // no leader-elected loops: the API only
	if err != nil {
		t.Fatal(err)
	}
	cfg.RESTListen = "127.0.0.1:0"
	replica, err := app.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := h.run(h.rctx, replica.Run)
	defer stop()
	select {
	case <-replica.Ready():
	case <-time.After(time.Minute):
		t.Fatal("REST replica not ready within a minute")
	}

	dir := t.TempDir()
	certPEM, keyPEM, err := h.ca.ClientCertificate(pki.AdminCommonName, []string{pki.AdminGroup}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"ca.pem": h.ca.BundlePEM(), "admin.pem": certPEM, "admin-key.pem": keyPEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ensureQueue(t, "e2e")
	name := fmt.Sprintf("py-follow-%d", pyRuns.Add(1)) // a resubmitted name is the cancelled job (-count)
	job, err := json.Marshal(newJob(name, "e2e", 2, 8))
	if err != nil {
		t.Fatal(err)
	}
	script := `
import sys
from shoal import Client
c = Client.from_env()
c.submit(sys.stdin.read())
for phase in c.follow(sys.argv[1]):
    print(phase, flush=True)
`
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", script, name)
	cmd.Dir = filepath.Join("..", "..", "clients", "python")
	cmd.Stdin = strings.NewReader(string(job))
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "SHOAL_REST_URL=https://"+replica.RESTAddress(),
		"SHOAL_CA_FILE="+filepath.Join(dir, "ca.pem"), "SHOAL_CERT_FILE="+filepath.Join(dir, "admin.pem"),
		"SHOAL_KEY_FILE="+filepath.Join(dir, "admin-key.pem"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var phases []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		phases = append(phases, sc.Text())
		if sc.Text() == string(v1alpha1.JobRunning) {
			if _, _, err := h.jobs.Cancel(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("python follow: %v (phases %v)\n%s", err, phases, stderr.String())
	}
	// follow yields the phase the job has when it starts (Pending, or
	// already Placed when the scheduler was quicker than the client's GET)
	// and then every new one, in the lifecycle's order.
	order := map[string]int{string(v1alpha1.JobPending): 0, string(v1alpha1.JobPlaced): 1,
		string(v1alpha1.JobRunning): 2, string(v1alpha1.JobCancelled): 3}
	if len(phases) < 2 || phases[len(phases)-1] != string(v1alpha1.JobCancelled) ||
		!slices.Contains(phases, string(v1alpha1.JobRunning)) {
		t.Fatalf("followed phases %v, want [Pending|Placed], ..., Running, Cancelled", phases)
	}
	t.Logf("followed over REST from Python: %v", phases)
	for i, p := range phases {
		o, ok := order[p]
		if !ok || i > 0 && o <= order[phases[i-1]] {
			t.Fatalf("phase %d: %s out of the lifecycle's order Pending, Placed, Running, Cancelled (all: %v)", i, p, phases)
		}
	}
}
