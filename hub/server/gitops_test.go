// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/grpctest"
)

type gitopsClients struct {
	clusters shoalv1.ClustersClient
	gitops   shoalv1.GitOpsClient
	rollouts shoalv1.RolloutsClient
}

// gitopsEnv serves Clusters (ReportGitOpsStatus), GitOps and Rollouts on an
// embedded store with two Ready clusters a and b; every call is made as the
// agent of cluster a (the real server checks its certificate first).
func gitopsEnv(t *testing.T) gitopsClients {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an embedded etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, store.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	col := store.NewCollection(st, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]())
	for _, n := range []string{"a", "b"} {
		cl := &v1alpha1.Cluster{Status: v1alpha1.ClusterStatus{State: v1alpha1.ClusterReady}}
		cl.Name = n
		if _, err := col.Create(ctx, n, cl); err != nil {
			t.Fatal(err)
		}
	}
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(st, ca, registry.Config{})
	g := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		ctx = context.WithValue(ctx, identityKey{}, pki.Identity{Role: pki.RoleAgent, Cluster: "a"})
		resp, err := h(ctx, req)
		return resp, toStatus(ctx, info.FullMethod, err)
	}))
	shoalv1.RegisterClustersServer(g, clustersService(reg, true, newSourceLimiter(0, 0), nil, nil))
	GitOpsService(reg)(g)
	RolloutsService(rollout.NewController(st, reg, rollout.Config{}))(g)
	conn := grpctest.Serve(t, g)
	return gitopsClients{shoalv1.NewClustersClient(conn), shoalv1.NewGitOpsClient(conn), shoalv1.NewRolloutsClient(conn)}
}

func TestGitOpsOverGRPC(t *testing.T) {
	c := gitopsEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set := func(cluster, srcJSON string) (*shoalv1.Object, error) {
		return c.gitops.SetSource(ctx, &shoalv1.SetGitOpsSourceRequest{Cluster: cluster, SourceJson: []byte(srcJSON)})
	}
	_, err := set("a", `{"url":"https://bob:hunter2@git.example.com/fleet.git"}`)
	wantCode(t, err, codes.InvalidArgument, "credentials")
	_, err = set("a", `{"url":"https://git.example.com/fleet.git","password":"hunter2"}`)
	wantCode(t, err, codes.InvalidArgument, "password")
	_, err = set("nope", `{"url":"https://git.example.com/fleet.git"}`)
	wantCode(t, err, codes.NotFound, "nope")
	for _, n := range []string{"a", "b"} {
		if _, err := set(n, `{"url":"https://git.example.com/fleet.git","ref":{"branch":"main"},"path":"clusters/`+n+`","secretRef":"git-creds","prune":true}`); err != nil {
			t.Fatal(err)
		}
	}
	const old, rev = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	report := func(st v1alpha1.GitOpsStatus) v1alpha1.GitOpsSource {
		t.Helper()
		b, _ := json.Marshal(st)
		resp, err := c.clusters.ReportGitOpsStatus(ctx, &shoalv1.ReportGitOpsStatusRequest{StatusJson: b})
		if err != nil {
			t.Fatal(err)
		}
		var src v1alpha1.GitOpsSource
		if err := json.Unmarshal(resp.SourceJson, &src); err != nil {
			t.Fatal(err)
		}
		return src
	}
	if src := report(v1alpha1.GitOpsStatus{AppliedCommit: old, Health: v1alpha1.GitOpsHealthHealthy}); src.Path != "clusters/a" || src.SecretRef != "git-creds" || src.Ref.Commit != "" {
		t.Fatalf("source for a = %+v", src)
	}
	obj, err := c.rollouts.CreateRollout(ctx, &shoalv1.CreateRolloutRequest{Name: "r1", Revision: rev, Waves: "1,100%", SoakSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(obj.Json), `"phase":"Progressing"`) {
		t.Fatalf("created rollout = %s", obj.Json)
	}
	if src := report(v1alpha1.GitOpsStatus{AppliedCommit: old, Health: v1alpha1.GitOpsHealthHealthy}); src.Ref.Commit != rev {
		t.Fatalf("canary a not pinned to %s: %+v", rev, src)
	}
	list, err := c.gitops.ListStatus(ctx, &shoalv1.ListGitOpsStatusRequest{})
	if err != nil || len(list.Items) != 2 || !strings.Contains(string(list.Items[0].Json), `"pinnedCommit":"`+rev+`"`) {
		t.Fatalf("ListStatus = %v, %v", list, err)
	}
	if strings.Contains(string(list.Items[1].Json), "pinnedCommit") {
		t.Fatalf("second wave pinned: %s", list.Items[1].Json)
	}
	if _, err := c.rollouts.AbortRollout(ctx, &shoalv1.RolloutRequest{Name: "r1"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.rollouts.AbortRollout(ctx, &shoalv1.RolloutRequest{Name: "r1"})
	wantCode(t, err, codes.FailedPrecondition, "Halted")
	if src := report(v1alpha1.GitOpsStatus{AppliedCommit: old, Health: v1alpha1.GitOpsHealthHealthy}); src.Ref.Commit != old {
		t.Fatalf("aborted canary not pinned back to %s: %+v", old, src)
	}
	_, err = c.rollouts.GetRollout(ctx, &shoalv1.RolloutRequest{Name: "nope"})
	wantCode(t, err, codes.NotFound, "nope")
}
