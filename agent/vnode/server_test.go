// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// fakeBackend records the container logs asked for.
type fakeBackend struct {
	*fakeStats
	logs    []string
	streams []string
}

func (f *fakeBackend) Logs(_ context.Context, ns, pod, container string, _ api.ContainerLogOpts) (io.ReadCloser, error) {
	f.logs = append(f.logs, ns+"/"+pod+"/"+container)
	return io.NopCloser(strings.NewReader("log of " + pod)), nil
}

func (f *fakeBackend) Exec(_ context.Context, _, pod, _ string, _ []string, _ api.AttachIO) error {
	f.streams = append(f.streams, "exec:"+pod)
	return nil
}

func (f *fakeBackend) Attach(_ context.Context, _, pod, _ string, _ api.AttachIO) error {
	f.streams = append(f.streams, "attach:"+pod)
	return nil
}

func (f *fakeBackend) PortForward(_ context.Context, _, pod string, port int32, _ io.ReadWriteCloser) error {
	f.streams = append(f.streams, fmt.Sprintf("portforward:%s:%d", pod, port))
	return nil
}

func TestEndpoint(t *testing.T) {
	const node = "shoal-eu1-h100"
	m0, m1 := hubMember("m0"), hubMember("m1")
	other := hubMember("x")
	other.Spec.NodeName = "shoal-eu1-a100"
	// Bound to the node but not placed by Shoal (no job label).
	stray := hubMember("stray")
	delete(stray.Labels, v1alpha1.LabelJob)
	// Placed and bound, but no local pod of it (yet): not reachable either.
	unsynced := hubMember("unsynced")
	b := &fakeBackend{fakeStats: &fakeStats{asked: map[string]int{}, local: map[string]*corev1.Pod{"m0": localOf("m0", "n1"),
		"m1": localOf("m1", "")}, // m1's local pod is not scheduled yet
		summaries: map[string]*statsv1alpha1.Summary{"n1": {Pods: []statsv1alpha1.PodStats{
			podStat("shoal-jobs", "m0", "local-m0", time.Now(), 1000, 10)}}}}}
	e := &endpoint{node: node, members: &members{node: node, lister: lister(t, m1, m0, other, stray, unsynced)}, b: b, started: time.Now()}
	srv := httptest.NewServer(e.handler())
	defer srv.Close()
	get := func(path string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}

	code, body := get("/pods")
	var list corev1.PodList
	if err := json.Unmarshal(body, &list); code != http.StatusOK || err != nil {
		t.Fatalf("/pods = %d %s (%v)", code, body, err)
	}
	if len(list.Items) != 3 || list.Items[0].Name != "m0" || list.Items[1].Name != "m1" || list.Items[2].Name != "unsynced" ||
		list.Items[0].UID != m0.UID {
		t.Errorf("/pods = %+v, want the hub pods m0, m1 and unsynced", list.Items)
	}

	code, body = get("/stats/summary")
	var sum statsv1alpha1.Summary
	if err := json.Unmarshal(body, &sum); code != http.StatusOK || err != nil {
		t.Fatalf("/stats/summary = %d %s (%v)", code, body, err)
	}
	if sum.Node.NodeName != node || len(sum.Pods) != 1 || sum.Pods[0].PodRef.UID != string(m0.UID) || *sum.Node.CPU.UsageNanoCores != 1000 {
		t.Errorf("summary = %s", body)
	}

	if code, body = get("/containerLogs/shoal-jobs/m1/main"); code != http.StatusOK || string(body) != "log of m1" {
		t.Errorf("member logs = %d %q", code, body)
	}
	// Another node's pod, a pod of no node, and a pod Shoal did not place
	// are unknown here, as on a real kubelet.
	for _, path := range []string{"/containerLogs/shoal-jobs/x/main", "/containerLogs/kube-system/coredns/main",
		"/containerLogs/shoal-jobs/stray/main", "/containerLogs/shoal-jobs/unsynced/main"} {
		if code, _ = get(path); code != http.StatusNotFound {
			t.Errorf("%s = %d, want 404", path, code)
		}
	}
	if len(b.logs) != 1 {
		t.Errorf("backend asked for logs %v, want only the member's", b.logs)
	}
	// The streaming routes: a member reaches the backend, any other pod does not.
	for _, pod := range []string{"m1", "x", "stray", "unsynced"} {
		stream := &closer{}
		errs := []error{e.exec(t.Context(), "shoal-jobs", pod, "main", []string{"id"}, nil),
			e.attach(t.Context(), "shoal-jobs", pod, "main", nil),
			e.portForward(t.Context(), "shoal-jobs", pod, 8080, stream)}
		if pod != "m1" && !stream.closed {
			t.Error("a refused port-forward stream was left open")
		}
		for i, err := range errs {
			if member := pod == "m1"; member != (err == nil) || !member && !errdefs.IsNotFound(err) {
				t.Errorf("stream %d to %s: %v", i, pod, err)
			}
		}
	}
	if strings.Join(b.streams, " ") != "exec:m1 attach:m1 portforward:m1:8080" {
		t.Errorf("backend streams = %v, want the member's only", b.streams)
	}
}

// closer is a port-forward stream that records its closing.
type closer struct {
	io.ReadWriter
	closed bool
}

func (c *closer) Close() error { c.closed = true; return nil }

func TestNodeAddr(t *testing.T) {
	for _, tt := range []struct {
		listen string
		i      int
		want   string
	}{{":10250", 0, ":10250"}, {":10250", 3, ":10253"}, {"127.0.0.1:0", 5, "127.0.0.1:0"}} {
		if got, err := nodeAddr(tt.listen, tt.i); err != nil || got != tt.want {
			t.Errorf("nodeAddr(%q, %d) = %q, %v, want %q", tt.listen, tt.i, got, err, tt.want)
		}
	}
	for _, bad := range []string{"10250", ":x", ":65535"} {
		if _, err := nodeAddr(bad, 1); err == nil {
			t.Errorf("nodeAddr(%q, 1) accepted", bad)
		}
	}
}
