// SPDX-License-Identifier: Apache-2.0

package hub

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/internal/freeport"
)

// hubProc is a running shoal-hub.
type hubProc struct {
	t          *testing.T
	dataDir    string
	configPath string
	addr       string
	httpAddr   string
	extra      []string
	cmd        *exec.Cmd
	exited     chan struct{}
	log        *bytes.Buffer
}

func freeAddr(t *testing.T) string {
	t.Helper()
	a, err := freeport.Addr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// startHub runs shoal-hub with a data directory of its own and waits
// until /readyz answers; extra flags select external etcd and so on.
func startHub(t *testing.T, extra ...string) *hubProc {
	t.Helper()
	dir := t.TempDir()
	h := &hubProc{t: t, dataDir: filepath.Join(dir, "data"), configPath: filepath.Join(dir, "config"), extra: extra}
	h.start()
	t.Cleanup(h.stop)
	return h
}

// start (re)starts the process on fresh ports with the same data directory.
func (h *hubProc) start() {
	t := h.t
	t.Helper()
	h.addr, h.httpAddr = freeAddr(t), freeAddr(t)
	args := append([]string{"--data-dir", h.dataDir, "--listen", h.addr, "--http-listen", h.httpAddr,
		"--admin-config", h.configPath, "--cluster-grace", "5s"}, h.extra...)
	h.log = &bytes.Buffer{}
	h.cmd = exec.Command(filepath.Join(binDir, "shoal-hub"), args...)
	h.cmd.Stdout, h.cmd.Stderr = h.log, h.log
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.exited = make(chan struct{})
	go func() { _ = h.cmd.Wait(); close(h.exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for !h.ready() {
		select {
		case <-h.exited:
			t.Fatalf("shoal-hub exited during start:\n%s", h.log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("shoal-hub not ready after 60s:\n%s", h.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ready says whether the hub is ready and settled: a lone hub is ready
// while it campaigns (no leader elected), then not until its scheduler's
// first cycle, so it waits for this replica to lead and, when it runs a
// scheduler, for that cycle.
func (h *hubProc) ready() bool {
	resp, err := http.Get("http://" + h.httpAddr + "/readyz?verbose")
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	return resp.StatusCode == http.StatusOK && strings.Contains(body, "hub-leader ok: this replica") &&
		(!strings.Contains(body, "scheduler-leader") || strings.Contains(body, "scheduler-leader ok: leading"))
}

// stop sends SIGTERM and waits for a clean exit.
func (h *hubProc) stop() {
	if h.cmd == nil {
		return
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
		if code := h.cmd.ProcessState.ExitCode(); code != 0 {
			h.t.Errorf("shoal-hub exited with %d after SIGTERM:\n%s", code, h.log)
		}
	case <-time.After(30 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.exited
		h.t.Errorf("shoal-hub did not stop within 30s of SIGTERM:\n%s", h.log)
	}
	h.cmd = nil
}

// restart stops the hub and starts it again on the same data directory.
func (h *hubProc) restart() {
	h.stop()
	h.start()
}

// adminContext is the context shoal-hub wrote into its admin config.
func (h *hubProc) adminContext() *configv1alpha1.Context {
	h.t.Helper()
	cfg, err := configv1alpha1.Load(h.configPath)
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := cfg.Context("")
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

// dial connects to the hub with tlsCfg and closes the connection with the test.
func (h *hubProc) dial(t *testing.T, creds credentials.TransportCredentials) shoalv1.ClustersClient {
	t.Helper()
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return shoalv1.NewClustersClient(conn)
}

// admin is a Clusters client with the admin identity.
func (h *hubProc) admin(t *testing.T) shoalv1.ClustersClient {
	t.Helper()
	cfg, err := h.adminContext().ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	return h.dial(t, credentials.NewTLS(cfg))
}

// anonymous is a Clusters client that trusts the hub CA and has no certificate.
func (h *hubProc) anonymous(t *testing.T) shoalv1.ClustersClient {
	t.Helper()
	c := *h.adminContext()
	c.CertData, c.KeyData = "", ""
	cfg, err := c.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	return h.dial(t, credentials.NewTLS(cfg))
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// metrics returns the hub's /metrics text.
func (h *hubProc) metrics(t *testing.T) string {
	t.Helper()
	resp, err := http.Get("http://" + h.httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return b.String()
}

// shoal runs the CLI against the hub's admin config.
func (h *hubProc) shoal(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "shoal"), append([]string{"--config", h.configPath}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("shoal %v: %w\n%s", args, err, out)
	}
	return string(out), nil
}
