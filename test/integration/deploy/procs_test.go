// SPDX-License-Identifier: Apache-2.0

package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/freeport"
	"github.com/shoal-dev/shoal/test/framework"
)

// proc is a process started by the test, its output in Log.
type proc struct {
	Name, Log string
	cmd       *exec.Cmd
	done      chan struct{}
}

// start runs bin with args and exactly env (nothing of the test's own
// environment: no KUBECONFIG, no HOME), stopped when the test ends.
func start(t *testing.T, name, bin string, args, env []string) *proc {
	t.Helper()
	log := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{Name: name, Log: log, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = f.Close(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", name, p.tail(30))
		}
	})
	return p
}

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proc) output() string {
	b, _ := os.ReadFile(p.Log)
	return string(b)
}

func (p *proc) tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.output(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePort is a TCP port free on loopback now (internal/freeport).
func freePort(t *testing.T) int {
	t.Helper()
	p, err := freeport.Pick("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// eventually polls cond every 250ms until it holds or timeout passes; the
// last error says why not.
func eventually(t *testing.T, timeout time.Duration, what string, procs []*proc, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		for _, p := range procs {
			if !p.alive() {
				t.Fatalf("%s: %s exited:\n%s", what, p.Name, p.tail(30))
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %s (last: %v)", what, timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// hubAPI is the hub's gRPC API dialled with the admin identity shoal-hub
// wrote into its --admin-config.
type hubAPI struct {
	conn     *grpc.ClientConn
	clusters shoalv1.ClustersClient
	jobs     shoalv1.JobsClient
	queues   shoalv1.QueuesClient
	gitops   shoalv1.GitOpsClient
}

func dialHub(t *testing.T, configPath, context string) *hubAPI {
	t.Helper()
	conn := framework.DialHub(t, configPath, context)
	return &hubAPI{conn: conn, clusters: shoalv1.NewClustersClient(conn), jobs: shoalv1.NewJobsClient(conn),
		queues: shoalv1.NewQueuesClient(conn), gitops: shoalv1.NewGitOpsClient(conn)}
}

func object(t *testing.T, v any) *shoalv1.Object {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &shoalv1.Object{Json: b}
}

func (h *hubAPI) job(ctx context.Context, name string) (*v1alpha1.Job, error) {
	o, err := h.jobs.Get(ctx, &shoalv1.GetJobRequest{Name: name})
	if err != nil {
		return nil, err
	}
	var j v1alpha1.Job
	return &j, json.Unmarshal(o.GetJson(), &j)
}

func (h *hubAPI) clusterList(ctx context.Context) (map[string]*v1alpha1.Cluster, error) {
	resp, err := h.clusters.ListClusters(ctx, &shoalv1.ListClustersRequest{Options: &shoalv1.ListOptions{Limit: 100}})
	if err != nil {
		return nil, err
	}
	out := map[string]*v1alpha1.Cluster{}
	for _, o := range resp.Items {
		var c v1alpha1.Cluster
		if err := json.Unmarshal(o.GetJson(), &c); err != nil {
			return nil, err
		}
		out[c.Name] = &c
	}
	return out, nil
}

func (h *hubAPI) gitopsStatus(ctx context.Context) (map[string]*v1alpha1.GitOpsStatus, error) {
	resp, err := h.gitops.ListStatus(ctx, &shoalv1.ListGitOpsStatusRequest{})
	if err != nil {
		return nil, err
	}
	out := map[string]*v1alpha1.GitOpsStatus{}
	for _, o := range resp.Items {
		var c v1alpha1.Cluster
		if err := json.Unmarshal(o.GetJson(), &c); err != nil {
			return nil, err
		}
		out[c.Name] = c.Status.GitOps
	}
	return out, nil
}

// noAdmin fails unless p's arguments and environment name no file of the
// fleet's administrator kubeconfigs or PKI, and no kubeconfig outside the
// files the chart gives the pod.
func noAdmin(t *testing.T, p *process, fleetDir string) {
	t.Helper()
	for _, s := range append(append([]string{}, p.Args...), p.Env...) {
		if strings.Contains(s, fleetDir) {
			t.Fatalf("%s: %q names the fleet's administrator files", p.ServiceAccount, s)
		}
		if strings.HasPrefix(s, "KUBECONFIG=") {
			t.Fatalf("%s: KUBECONFIG in its environment", p.ServiceAccount)
		}
	}
	if kc, ok := flagValue(p.Args, "kubeconfig"); ok {
		b, err := os.ReadFile(kc)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("client-certificate")) || bytes.Contains(b, []byte("client-key")) {
			t.Fatalf("%s: its kubeconfig %s holds a client certificate", p.ServiceAccount, kc)
		}
	}
}

func mustf(t *testing.T, err error, format string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(format, args...), err)
	}
}
