// SPDX-License-Identifier: Apache-2.0

// Package etcdcluster runs a multi-member etcd cluster from the etcd binary
// in the binary cache, for tests of Shoal against external etcd.
package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/shoal-dev/shoal/internal/freeport"
)

// Member is one etcd process of a Cluster.
type Member struct {
	Name      string
	ClientURL string
	PeerURL   string
	DataDir   string
	bin       string
	args      []string
	logPath   string
	certs     *Certs
	cmd       *exec.Cmd
	exited    chan struct{}
}

// Cluster is a set of etcd members started together.
type Cluster struct {
	Members []*Member
	// Certs is set for a TLS cluster (client URLs https, client
	// certificates required).
	Certs *Certs
}

// Options change how Start runs the cluster.
type Options struct {
	// TLS serves clients over TLS and requires client certificates.
	TLS bool
}

// Start starts an n-member cluster under dir with the etcd binary bin and
// waits until every member reports healthy.
func Start(ctx context.Context, bin, dir string, n int, opts Options) (*Cluster, error) {
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("etcd binary %s missing: run `make k8s-bin`", bin)
	}
	c := &Cluster{}
	scheme := "http"
	if opts.TLS {
		certs, err := writeCerts(dir)
		if err != nil {
			return nil, fmt.Errorf("etcd test certificates: %w", err)
		}
		c.Certs, scheme = certs, "https"
	}
	var initial []string
	for i := range n {
		cp, err := freePort()
		if err != nil {
			return nil, err
		}
		pp, err := freePort()
		if err != nil {
			return nil, err
		}
		m := &Member{
			Name:      fmt.Sprintf("m%d", i),
			ClientURL: fmt.Sprintf("%s://127.0.0.1:%d", scheme, cp),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", pp),
			DataDir:   filepath.Join(dir, fmt.Sprintf("m%d", i)),
			bin:       bin,
			logPath:   filepath.Join(dir, fmt.Sprintf("m%d.log", i)),
		}
		initial = append(initial, m.Name+"="+m.PeerURL)
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		m.args = []string{
			"--name", m.Name, "--data-dir", m.DataDir,
			"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
			"--listen-peer-urls", m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "shoal-test", "--log-level", "warn",
		}
		if c.Certs != nil {
			m.args = append(m.args, "--cert-file", c.Certs.ServerCertFile, "--key-file", c.Certs.ServerKeyFile,
				"--trusted-ca-file", c.Certs.CAFile, "--client-cert-auth")
			m.certs = c.Certs
		}
		if err := m.Start(); err != nil {
			c.Stop()
			return nil, err
		}
	}
	for _, m := range c.Members {
		if err := m.WaitHealthy(ctx); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// Endpoints are the members' client URLs.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, 0, len(c.Members))
	for _, m := range c.Members {
		eps = append(eps, m.ClientURL)
	}
	return eps
}

// Stop stops every member that runs.
func (c *Cluster) Stop() {
	for _, m := range c.Members {
		_ = m.Stop()
	}
}

// Start (re)starts the member's process with its data directory.
func (m *Member) Start() error {
	logf, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(m.bin, m.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start etcd member %s: %w", m.Name, err)
	}
	m.cmd, m.exited = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(m.exited)
	}()
	return nil
}

// Stop sends SIGTERM and waits for the process to exit (SIGKILL after 10s).
func (m *Member) Stop() error {
	if m.cmd == nil {
		return nil
	}
	defer func() { m.cmd = nil }()
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
		return nil
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
		return errors.New("etcd member " + m.Name + " did not stop on SIGTERM")
	}
}

// Running reports whether the member's process runs.
func (m *Member) Running() bool { return m.cmd != nil }

// Log returns the member's log output so far, for test failure messages.
func (m *Member) Log() string {
	b, _ := os.ReadFile(m.logPath)
	return string(b)
}

// WaitHealthy polls the member's /health endpoint until it answers healthy.
func (m *Member) WaitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		if m.healthy(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd member %s not healthy: %w\n%s", m.Name, ctx.Err(), m.Log())
		case <-m.exited:
			return fmt.Errorf("etcd member %s exited\n%s", m.Name, m.Log())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (m *Member) healthy(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.ClientURL+"/health", nil)
	if err != nil {
		return false
	}
	client := http.DefaultClient
	if m.certs != nil {
		tlsCfg, err := m.certs.ClientTLS()
		if err != nil {
			return false
		}
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
		defer client.CloseIdleConnections()
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	return resp.StatusCode == http.StatusOK
}

// freePort is a TCP port free on loopback now (internal/freeport).
func freePort() (int, error) { return freeport.Pick("127.0.0.1") }
