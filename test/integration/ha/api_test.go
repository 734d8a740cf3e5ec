// SPDX-License-Identifier: Apache-2.0

package ha_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"os/exec"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// api is the admin's connections to every replica, each dialled directly
// (clients retry on another replica when one is Unavailable).
type api struct {
	conns []*grpc.ClientConn
	tls   *tls.Config
	next  atomic.Int64
}

func dialReplicas(t *testing.T, rs *replicaSet) *api {
	t.Helper()
	cfg, err := configv1alpha1.Load(filepath.Join(rs.replicas[0].dir, "admin-config"))
	if err != nil {
		t.Fatal(err)
	}
	hctx, err := cfg.Context("ha")
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := hctx.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	a := &api{tls: tlsCfg}
	for _, r := range rs.replicas {
		conn, err := grpc.NewClient(r.addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
		if err != nil {
			t.Fatal(err)
		}
		a.conns = append(a.conns, conn)
	}
	t.Cleanup(func() {
		for _, c := range a.conns {
			_ = c.Close()
		}
	})
	return a
}

// retryable are the codes of a replica that is gone or going: the call
// is tried on another replica.
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return true
	}
	return false
}

// call runs fn against the replicas in turn, starting with the next one,
// until it does not fail as retryable or ctx ends.
func (a *api) call(ctx context.Context, fn func(ctx context.Context, conn *grpc.ClientConn) error) error {
	start := int(a.next.Add(1))
	for i := 0; ; i++ {
		conn := a.conns[(start+i)%len(a.conns)]
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := fn(cctx, conn)
		cancel()
		if err == nil || !retryable(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// listJobs lists every job of queue ("" all) through any live replica.
func (a *api) listJobs(ctx context.Context, queue string) ([]*v1alpha1.Job, error) {
	var out []*v1alpha1.Job
	opts := &shoalv1.ListOptions{Limit: 500}
	for {
		var resp *shoalv1.ListJobsResponse
		err := a.call(ctx, func(ctx context.Context, conn *grpc.ClientConn) error {
			var err error
			resp, err = shoalv1.NewJobsClient(conn).List(ctx, &shoalv1.ListJobsRequest{Options: opts, Queue: queue})
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, o := range resp.Items {
			var j v1alpha1.Job
			if err := json.Unmarshal(o.GetJson(), &j); err != nil {
				return nil, err
			}
			out = append(out, &j)
		}
		if resp.GetMeta().GetContinue() == "" {
			return out, nil
		}
		opts = &shoalv1.ListOptions{Limit: 500, Continue: resp.Meta.Continue}
	}
}

func (a *api) createQueue(ctx context.Context, q *v1alpha1.Queue) error {
	b, err := json.Marshal(q)
	if err != nil {
		return err
	}
	return a.call(ctx, func(ctx context.Context, conn *grpc.ClientConn) error {
		_, err := shoalv1.NewQueuesClient(conn).Create(ctx, &shoalv1.CreateQueueRequest{Queue: &shoalv1.Object{Json: b}})
		return err
	})
}

// clusterStates maps each registered cluster to its state.
func (a *api) clusterStates(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := a.call(ctx, func(ctx context.Context, conn *grpc.ClientConn) error {
		resp, err := shoalv1.NewClustersClient(conn).ListClusters(ctx, &shoalv1.ListClustersRequest{Options: &shoalv1.ListOptions{Limit: 500}})
		if err != nil {
			return err
		}
		for _, o := range resp.Items {
			var c v1alpha1.Cluster
			if err := json.Unmarshal(o.GetJson(), &c); err != nil {
				return err
			}
			out[c.Name] = string(c.Status.State)
		}
		return nil
	})
	return out, err
}

// startAgents starts one shoal-agent per workload cluster, dialling the
// balancer (the hub's Service), each with its own join token, and waits
// until every cluster is Ready with its virtual nodes on the hub cluster.
func startAgents(t *testing.T, ctx context.Context, a *api, hubAddr string) {
	t.Helper()
	for _, c := range fleet.Workloads() {
		cs, err := c.Clientset()
		if err != nil {
			t.Fatal(err)
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: devfleet.AgentNamespace}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		var tok *shoalv1.CreateJoinTokenResponse
		if err := a.call(ctx, func(ctx context.Context, conn *grpc.ClientConn) error {
			var err error
			tok, err = shoalv1.NewClustersClient(conn).CreateJoinToken(ctx, &shoalv1.CreateJoinTokenRequest{TtlSeconds: 3600, Usages: 1})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		tokenFile := filepath.Join(dir, "token")
		if err := os.WriteFile(tokenFile, []byte(tok.Token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{
			"--hub=" + hubAddr, "--token-file=" + tokenFile, "--ca-hash=" + tok.CaHash,
			"--cluster-name=" + c.Name, "--kubeconfig=" + c.Kubeconfig, "--namespace=" + devfleet.AgentNamespace,
			"--kubelet-listen=127.0.0.1:0", "--kubelet-address=127.0.0.1", "--kubelet-client-ca=" + fleet.KubeletClientCAFile(),
			"--metrics-addr=" + freeAddr(t), "--labels=profile=" + c.Profile + ",region=" + c.Region,
		}
		logf, err := os.Create(filepath.Join(dir, "agent.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(agentBin, args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			_ = logf.Close()
			if t.Failed() {
				b, _ := os.ReadFile(logf.Name())
				t.Logf("--- agent of %s (last 30 lines):\n%s", c.Name, tail(string(b), 30))
			}
		})
	}
	hcs, err := fleet.Hub().Clientset()
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, 2*time.Minute, "every cluster Ready with virtual nodes", func(ctx context.Context) error {
		states, err := a.clusterStates(ctx)
		if err != nil {
			return err
		}
		nodes, err := devfleet.VirtualNodes(ctx, hcs)
		if err != nil {
			return err
		}
		for _, c := range fleet.Workloads() {
			if states[c.Name] != "Ready" || nodes[c.Name] == 0 {
				return fmt.Errorf("cluster %s: state %q, %d virtual nodes", c.Name, states[c.Name], nodes[c.Name])
			}
		}
		return nil
	})
}

// eventually polls cond every 200ms until it returns nil or timeout passes.
func eventually(t *testing.T, ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond(ctx)
		if err == nil {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// servedCertificate completes a TLS handshake with addr as serverName,
// verified against the hub CA the admin config holds, and returns the
// leaf the replica served.
func (a *api) servedCertificate(addr, serverName string) (*tls.ConnectionState, error) {
	cfg := a.tls.Clone()
	cfg.ServerName, cfg.NextProtos = serverName, []string{"h2"}
	d := &net.Dialer{Timeout: 3 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	st := conn.ConnectionState()
	if len(st.PeerCertificates) == 0 {
		return nil, errors.New("no certificate served")
	}
	return &st, nil
}
