// SPDX-License-Identifier: Apache-2.0

package rest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// TestPythonClient runs the Python client's tests (clients/python, stdlib
// only) against a real hub: as a submitter of one queue with a client
// certificate it submits, gets, lists, watches, follows a job until it
// cancels it, and is refused without credentials; with an OIDC ID token
// (an in-process issuer) it is the token's user. Every test must run: a
// skip fails this test.
func TestPythonClient(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed (hack/host-deps.sh installs it): the Python client is not tested")
	}
	iss := startIssuer(t)
	h := startHub(t, "--oidc-issuer-url", iss.url, "--oidc-client-id", "shoal", "--oidc-ca-file", iss.caFile)
	ctx := testCtx(t)
	adminCtx := loadContext(t, h.configPath)
	conn := h.grpcConn(t, tlsConfig(t, adminCtx, false), "")
	if _, err := shoalv1.NewQueuesClient(conn).Create(ctx, &shoalv1.CreateQueueRequest{
		Queue: jsonObject(t, testqueue.New("ml").Quota("h100", 16).Obj())}); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "pat.yaml")
	h.shoal(t, "user", "create", "pat", "--role", "submitter", "--queue", "ml", "--out", cfgPath)
	h.shoal(t, "user", "create", "tok", "--role", "submitter", "--queue", "ml", "--oidc-username", "tok-sub")
	ca, cert, key := writePEMs(t, loadContext(t, cfgPath), "pat")

	cmd := exec.Command(py, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	cmd.Dir = filepath.Join("..", "..", "..", "clients", "python")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "SHOAL_REST_URL=https://"+h.restAddr,
		"SHOAL_CA_FILE="+ca, "SHOAL_CERT_FILE="+cert, "SHOAL_KEY_FILE="+key, "SHOAL_TEST_QUEUE=ml",
		"SHOAL_TEST_TOKEN="+iss.token(t, "tok-sub"), "SHOAL_TEST_TOKEN_USER=tok")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s\nhub log:\n%s", err, out, h.log)
	}
	if strings.Contains(string(out), "skipped") {
		t.Fatalf("python tests were skipped:\n%s", out)
	}
	ran := regexp.MustCompile(`Ran (\d+) tests`).FindStringSubmatch(string(out))
	if ran == nil || ran[1] == "0" {
		t.Fatalf("python3 -m unittest ran no tests:\n%s", out)
	}
	t.Logf("python3 -m unittest: ran %s tests", ran[1])
}

// followScript submits a job as the client's user and prints every phase
// follow reports, one a line.
const followScript = `
from shoal import Client
c = Client.from_env()
c.submit({"metadata": {"name": "across"}, "spec": {"queue": "ml", "gang": {"members": 1, "gpusPerMember": 1},
          "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})
for phase in c.follow("across"):
    print(phase, flush=True)
`

// TestPythonFollowAcrossRestart: the Python client's follow outlives a
// hub restart (the hub ends the watch at its stop; follow retries the
// connection until the hub is back and watches on from its last
// revision) and reports the cancellation made after the restart.
func TestPythonFollowAcrossRestart(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed (hack/host-deps.sh installs it): the Python client is not tested")
	}
	h := startHub(t)
	ctx := testCtx(t)
	adminTLS := tlsConfig(t, loadContext(t, h.configPath), false)
	if _, err := shoalv1.NewQueuesClient(h.grpcConn(t, adminTLS, "")).Create(ctx, &shoalv1.CreateQueueRequest{
		Queue: jsonObject(t, testqueue.New("ml").Quota("h100", 16).Obj())}); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "pat.yaml")
	h.shoal(t, "user", "create", "pat", "--role", "submitter", "--queue", "ml", "--out", cfgPath)
	ca, cert, key := writePEMs(t, loadContext(t, cfgPath), "pat")

	cmd := exec.CommandContext(ctx, py, "-c", followScript)
	cmd.Dir = filepath.Join("..", "..", "..", "clients", "python")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "SHOAL_REST_URL=https://"+h.restAddr,
		"SHOAL_CA_FILE="+ca, "SHOAL_CERT_FILE="+cert, "SHOAL_KEY_FILE="+key)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("follow ended before %s: %v\n%s", what, cmd.Wait(), stderr.String())
			}
			return l
		case <-time.After(60 * time.Second):
			t.Fatalf("no phase within 60s (%s)\n%s", what, stderr.String())
		}
		return ""
	}
	if p := next("the first phase"); p != "Pending" {
		t.Fatalf("first phase %q, want Pending", p)
	}
	h.stop()
	h.start()
	if _, err := shoalv1.NewJobsClient(h.grpcConn(t, adminTLS, "")).Cancel(ctx, &shoalv1.CancelJobRequest{Name: "across"}); err != nil {
		t.Fatal(err)
	}
	if p := next("the cancellation"); p != "Cancelled" {
		t.Fatalf("phase after the restart %q, want Cancelled", p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("follow after the terminal phase: %v\n%s", err, stderr.String())
	}
}
