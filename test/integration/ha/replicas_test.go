// SPDX-License-Identifier: Apache-2.0

package ha_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/internal/freeport"
	"github.com/shoal-dev/shoal/test/framework"
	"github.com/shoal-dev/shoal/test/integration/store/etcdcluster"
)

// replica is one shoal-hub process.
type replica struct {
	name           string
	dir            string
	addr, httpAddr string
	args           []string
	log            string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// replicaSet is the hub: three replicas on one etcd, sharing the CA
// through it.
type replicaSet struct {
	replicas []*replica
	etcd     *etcdcluster.Cluster
	lb       *balancer
}

func freeAddr(t *testing.T) string {
	t.Helper()
	a, err := freeport.Addr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// startReplicaSet starts a 3-member etcd with TLS and n shoal-hub replicas
// on it at once, behind a balancer that is their advertised address (the
// Service): the first to store its CA makes it the hub's, the others load
// it.
func startReplicaSet(t *testing.T, ctx context.Context, n int, hubKubeconfig string) *replicaSet {
	t.Helper()
	dir := t.TempDir()
	if os.Getenv("SHOAL_KEEP_FLEET") != "" { // as framework.Fleet.Stop: keep the replicas' logs
		var err error
		if dir, err = os.MkdirTemp("", "shoal-ha-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("replica logs kept in %s", dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o700); err != nil {
		t.Fatal(err)
	}
	etcd, err := etcdcluster.Start(ctx, filepath.Join(framework.BinDir(), "etcd"), filepath.Join(dir, "etcd"), 3, etcdcluster.Options{TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Stop)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keyFile := filepath.Join(dir, "pki-key")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)), 0o600); err != nil {
		t.Fatal(err)
	}
	rs := &replicaSet{etcd: etcd}
	rs.lb = newBalancer(t, rs.liveAddrs)
	var peers []string
	for i := range n {
		r := &replica{name: fmt.Sprintf("hub-%d", i), dir: filepath.Join(dir, fmt.Sprintf("hub-%d", i)),
			addr: freeAddr(t), httpAddr: freeAddr(t)}
		peers = append(peers, r.addr)
		rs.replicas = append(rs.replicas, r)
	}
	for _, r := range rs.replicas {
		r.log = filepath.Join(dir, r.name+".log")
		r.args = []string{
			"--data-dir=" + r.dir, "--listen=" + r.addr, "--http-listen=" + r.httpAddr,
			"--advertise-address=" + rs.lb.Addr(), "--peers=" + strings.Join(peers, ","), "--service-name=shoal-hub.shoal-system.svc",
			"--etcd-endpoints=" + strings.Join(etcd.Endpoints(), ","), "--etcd-ca=" + etcd.Certs.CAFile,
			"--etcd-cert=" + etcd.Certs.ClientCertFile, "--etcd-key=" + etcd.Certs.ClientKeyFile,
			"--pki-encryption-key-file=" + keyFile, "--kubeconfig=" + hubKubeconfig,
			"--admin-config=" + filepath.Join(r.dir, "admin-config"), "--admin-context=ha",
			"--gang-start-timeout=5m",
		}
		if ttl := os.Getenv("SHOAL_HA_ELECTION_TTL"); ttl != "" { // measure the failover at another TTL than the default
			r.args = append(r.args, "--election-ttl="+ttl)
		}
	}
	t.Cleanup(func() {
		for _, r := range rs.replicas {
			r.kill()
		}
		if t.Failed() {
			for _, r := range rs.replicas {
				b, _ := os.ReadFile(r.log)
				t.Logf("--- %s log (last 40 lines):\n%s", r.name, tail(string(b), 40))
			}
		}
	})
	// The first replica creates the CA and leads; the others, started
	// together after it, load the CA from the store and follow.
	first := rs.replicas[0]
	if err := first.start(); err != nil {
		t.Fatal(err)
	}
	if err := first.waitReady(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs.replicas[1:] {
		if err := r.start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rs.replicas {
		if err := r.waitReady(ctx, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	return rs
}

// liveAddrs are the gRPC addresses of the replicas that run.
func (rs *replicaSet) liveAddrs() []string {
	var out []string
	for _, r := range rs.replicas {
		if r.running() {
			out = append(out, r.addr)
		}
	}
	return out
}

// leader returns the replica whose /readyz?verbose says it leads check
// (scheduler-leader, dispatch-synced) and is synced, or nil.
func (rs *replicaSet) leader(ctx context.Context, check string) *replica {
	for _, r := range rs.replicas {
		if !r.running() {
			continue
		}
		_, body, err := r.readyz(ctx, true)
		if err == nil && strings.Contains(body, "[+]"+check+" ok: leading") {
			return r
		}
	}
	return nil
}

func (r *replica) start() error {
	logf, err := os.OpenFile(r.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(hubBin, r.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", r.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(exited)
	}()
	r.mu.Lock()
	r.cmd, r.exited = cmd, exited
	r.mu.Unlock()
	return nil
}

func (r *replica) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return false
	}
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (r *replica) kill() {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// readyz GETs /readyz (with ?verbose) and returns the status and body.
func (r *replica) readyz(ctx context.Context, verbose bool) (int, string, error) {
	url := "http://" + r.httpAddr + "/readyz"
	if verbose {
		url += "?verbose"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func (r *replica) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		code, _, err := r.readyz(ctx, false)
		if err == nil && code == http.StatusOK {
			return nil
		}
		if !r.running() {
			b, _ := os.ReadFile(r.log)
			return fmt.Errorf("%s exited:\n%s", r.name, tail(string(b), 30))
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(r.log)
			return fmt.Errorf("%s not ready within %s:\n%s", r.name, timeout, tail(string(b), 30))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
