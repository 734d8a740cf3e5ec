// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// fakePools answers the Pools calls from pools (by name), each stored at
// a revision; an update with another revision than the stored one is
// Aborted, a delete of a pool with bound queues FailedPrecondition.
type fakePools struct {
	shoalv1.PoolsClient
	t     *testing.T
	pools map[string]*v1alpha1.GPUPool
	revs  map[string]int64
	rev   int64

	created, updated []*v1alpha1.GPUPool
	updateRevs       []int64
	deleted          []string
}

func newFakePools(t *testing.T, ps ...*v1alpha1.GPUPool) *fakePools {
	f := &fakePools{t: t, pools: map[string]*v1alpha1.GPUPool{}, revs: map[string]int64{}}
	for _, p := range ps {
		f.store(p)
	}
	return f
}

func (f *fakePools) store(p *v1alpha1.GPUPool) {
	f.rev++
	f.pools[p.Name], f.revs[p.Name] = p.DeepCopy(), f.rev
}

func (f *fakePools) object(name string) *shoalv1.Object {
	b, err := json.Marshal(f.pools[name])
	if err != nil {
		f.t.Fatal(err)
	}
	return &shoalv1.Object{Json: b, Revision: f.revs[name]}
}

// decode reads the pool a call sent, as the hub does.
func (f *fakePools) decode(r *shoalv1.PoolRequest) *v1alpha1.GPUPool {
	p, err := v1alpha1.DecodeGPUPool(r.GetPool().GetJson())
	if err != nil {
		f.t.Fatalf("sent a pool the hub cannot decode: %v\n%s", err, r.GetPool().GetJson())
	}
	if r.Name != "" && r.Name != p.Name {
		f.t.Fatalf("request names %q, the pool %q", r.Name, p.Name)
	}
	return p
}

func (f *fakePools) Create(_ context.Context, r *shoalv1.PoolRequest, _ ...grpc.CallOption) (*shoalv1.Object, error) {
	p := f.decode(r)
	if _, ok := f.pools[p.Name]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "pool %q already exists", p.Name)
	}
	f.created = append(f.created, p)
	f.store(p)
	return f.object(p.Name), nil
}

func (f *fakePools) Update(_ context.Context, r *shoalv1.PoolRequest, _ ...grpc.CallOption) (*shoalv1.Object, error) {
	p := f.decode(r)
	cur, ok := f.pools[p.Name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "pool %q not found", p.Name)
	}
	if rev := r.GetPool().GetRevision(); rev != 0 && rev != f.revs[p.Name] {
		return nil, status.Errorf(codes.Aborted, "pool %q changed since revision %d", p.Name, rev)
	}
	f.updated, f.updateRevs = append(f.updated, p), append(f.updateRevs, r.GetPool().GetRevision())
	next := cur.DeepCopy()
	next.Spec = p.Spec
	f.store(next)
	return f.object(p.Name), nil
}

func (f *fakePools) Get(_ context.Context, r *shoalv1.GetPoolRequest, _ ...grpc.CallOption) (*shoalv1.Object, error) {
	if _, ok := f.pools[r.Name]; !ok {
		return nil, status.Errorf(codes.NotFound, "pool %q not found", r.Name)
	}
	return f.object(r.Name), nil
}

func (f *fakePools) List(context.Context, *shoalv1.ListPoolsRequest, ...grpc.CallOption) (*shoalv1.ListPoolsResponse, error) {
	out := &shoalv1.ListPoolsResponse{}
	for _, name := range sortedKeys(f.pools) {
		out.Items = append(out.Items, f.object(name))
	}
	return out, nil
}

func (f *fakePools) Delete(_ context.Context, r *shoalv1.GetPoolRequest, _ ...grpc.CallOption) (*shoalv1.DeletePoolResponse, error) {
	p, ok := f.pools[r.Name]
	switch {
	case !ok:
		return nil, status.Errorf(codes.NotFound, "pool %q not found", r.Name)
	case len(p.Status.Queues) > 0:
		return nil, status.Errorf(codes.FailedPrecondition, "queues %v are bound to GPU pool %q; remove the pool from their spec.pools first",
			p.Status.Queues, r.Name)
	}
	delete(f.pools, r.Name)
	f.deleted = append(f.deleted, r.Name)
	return &shoalv1.DeletePoolResponse{}, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}

// runPool runs `shoal pool ARGS` against cl; a nil cl fails the test when
// the command dials the hub.
func runPool(t *testing.T, cl shoalv1.PoolsClient, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := newPoolCommand(func(*cobra.Command) (shoalv1.PoolsClient, func(), error) {
		if cl == nil {
			t.Fatalf("pool %v dialed the hub; want a flag error first", args)
		}
		return cl, func() {}, nil
	})
	return execCommand(t, cmd, stdin, args...)
}

// samplePools is training-h100 (H100 nodes of node pool train, two
// queues bound, busy) and eu-spot (the eu clusters, cordoned,
// scale-to-zero with two idle nodes, one drained).
func samplePools() []*v1alpha1.GPUPool {
	meta := metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindGPUPool}
	return []*v1alpha1.GPUPool{
		{
			TypeMeta:   meta,
			ObjectMeta: metav1.ObjectMeta{Name: "training-h100", CreationTimestamp: *testTime("2026-12-01T12:00:00Z")},
			Spec:       v1alpha1.GPUPoolSpec{GPUProducts: []string{"NVIDIA-H100-80GB-HBM3"}, NodePools: []string{"train"}},
			Status: v1alpha1.GPUPoolStatus{Clusters: []string{"eu-1", "us-1"}, Nodes: 8, GPUs: 64, UsedGPUs: 48, FreeGPUs: 16,
				Queues: []string{"research/nlp", "research/vision"}, UpdateTime: testTime("2026-12-02T11:59:50Z")},
		},
		{
			TypeMeta:   meta,
			ObjectMeta: metav1.ObjectMeta{Name: "eu-spot", CreationTimestamp: *testTime("2026-12-02T10:00:00Z")},
			Spec: v1alpha1.GPUPoolSpec{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}},
				Cordoned: true, ScaleToZero: true},
			Status: v1alpha1.GPUPoolStatus{Clusters: []string{"eu-1"}, Nodes: 3, GPUs: 24, UsedGPUs: 8, FreeGPUs: 16,
				IdleNodes: []v1alpha1.IdleNode{
					{Cluster: "eu-1", Node: "spot-a", Since: *testTime("2026-12-02T11:30:00Z")},
					{Cluster: "eu-1", Node: "spot-b", Since: *testTime("2026-12-02T11:55:00Z")},
				},
				Drained: []string{"eu-1/spot-c"}},
		},
	}
}

func TestPoolCreateFromFlags(t *testing.T) {
	cl := newFakePools(t)
	out, err := runPool(t, cl, "", "create", "training-h100", "--product", "NVIDIA-H100-80GB-HBM3", "--product", "NVIDIA-H200",
		"--node-pool", "train,train-2", "--cluster-selector", "region=eu,tier=gpu", "--scale-to-zero")
	if err != nil {
		t.Fatal(err)
	}
	want := &v1alpha1.GPUPool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindGPUPool},
		ObjectMeta: metav1.ObjectMeta{Name: "training-h100"},
		Spec: v1alpha1.GPUPoolSpec{
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu", "tier": "gpu"}},
			GPUProducts:     []string{"NVIDIA-H100-80GB-HBM3", "NVIDIA-H200"},
			NodePools:       []string{"train", "train-2"},
			ScaleToZero:     true,
		},
	}
	if len(cl.created) != 1 || !reflect.DeepEqual(cl.created[0], want) {
		t.Fatalf("sent %+v\nwant %+v", cl.created, want)
	}
	if err := v1alpha1.ValidateGPUPool(cl.created[0]); err != nil {
		t.Fatalf("the flags made an invalid pool: %v", err)
	}
	if out != "gpupool/training-h100 created\n" {
		t.Fatalf("printed %q", out)
	}

	// no flags: every cluster, any product, any node pool
	if _, err := runPool(t, cl, "", "create", "all"); err != nil {
		t.Fatal(err)
	}
	if s := cl.created[1].Spec; !reflect.DeepEqual(s, v1alpha1.GPUPoolSpec{}) {
		t.Fatalf("sent spec %+v", s)
	}
	if _, err := runPool(t, cl, "", "create", "all"); err == nil || !strings.Contains(err.Error(), `create gpupool/all: pool "all" already exists`) {
		t.Fatalf("create again: %v", err)
	}
}

func TestPoolCreateFromFile(t *testing.T) {
	cl := newFakePools(t)
	out, err := runPool(t, cl, "", "create", "-f", "../../examples/gpu-pool.yaml", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.created) != 1 || cl.created[0].Name != "training-h100" ||
		!reflect.DeepEqual(cl.created[0].Spec, v1alpha1.GPUPoolSpec{GPUProducts: []string{"NVIDIA-H100-80GB-HBM3"}, NodePools: []string{"train"}}) {
		t.Fatalf("sent %+v", cl.created)
	}
	var got v1alpha1.GPUPool
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Name != "training-h100" || got.Kind != v1alpha1.KindGPUPool {
		t.Fatalf("-o json printed %+v, %v:\n%s", got, err, out)
	}

	// strict: a misspelt field; another kind; no name
	for in, want := range map[string]string{
		"apiVersion: shoal.dev/v1alpha1\nkind: GPUPool\nmetadata: {name: a}\nspec: {gpuProduct: [x]}\n": `unknown field "spec.gpuProduct"`,
		"apiVersion: shoal.dev/v1alpha1\nkind: Queue\nmetadata: {name: a}\n":                            "expected kind GPUPool",
		"apiVersion: shoal.dev/v1alpha1\nkind: GPUPool\nspec: {}\n":                                     "-: the pool has no metadata.name",
	} {
		if _, err := runPool(t, cl, in, "create", "-f", "-"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want mention of %q", err, want)
		}
	}
}

func TestPoolFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"create nothing", []string{"create"}, "name the pool (e.g. shoal pool create training-h100"},
		{"create file and name", []string{"create", "p", "-f", "x.yaml"}, "give either -f FILE or NAME with flags, not both (-f with NAME)"},
		{"create file and flags", []string{"create", "-f", "x.yaml", "--product", "P", "--scale-to-zero"},
			"not both (-f with --product, --scale-to-zero)"},
		{"create empty file", []string{"create", "-f", ""}, "-f needs a file"},
		{"create bad selector", []string{"create", "p", "--cluster-selector", "region"}, `invalid argument "region" for "--cluster-selector"`},
		{"create bad output", []string{"create", "p", "-o", "xml"}, "unknown output format"},
		{"update without file", []string{"update"}, "update needs -f FILE"},
		{"update with name", []string{"update", "p"}, "unknown command"},
		{"update negative revision", []string{"update", "-f", "-", "--revision", "-1"}, "--revision -1: must be 0 or more"},
		{"get nothing", []string{"get"}, "requires at least 1 arg"},
		{"list bad output", []string{"list", "-o", "xml"}, "unknown output format"},
		{"cordon two", []string{"cordon", "a", "b"}, "accepts 1 arg(s)"},
		{"scale-to-zero neither", []string{"scale-to-zero", "p"}, "give either --on or --off"},
		{"scale-to-zero both", []string{"scale-to-zero", "p", "--on", "--off"}, "give either --on or --off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runPool(t, nil, "", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want mention of %q", err, tc.want)
			}
		})
	}
}

func TestPoolUpdate(t *testing.T) {
	cl := newFakePools(t, samplePools()...)
	in := "apiVersion: shoal.dev/v1alpha1\nkind: GPUPool\nmetadata: {name: training-h100}\n" +
		"spec: {gpuProducts: [NVIDIA-H200], nodePools: [train]}\nstatus: {nodes: 99}\n"
	if _, err := runPool(t, cl, in, "update", "-f", "-", "--revision", "7"); err == nil ||
		!strings.Contains(err.Error(), "update gpupool/training-h100: pool \"training-h100\" changed since revision 7\n(it changed meanwhile") {
		t.Fatalf("stale revision: %v", err)
	}
	rev := cl.revs["training-h100"]
	out, err := runPool(t, cl, in, "update", "-f", "-", "--revision", "1")
	if err != nil || out != "gpupool/training-h100 updated\n" || rev != 1 {
		t.Fatalf("update: %v %q (revision %d)", err, out, rev)
	}
	u := cl.updated[0]
	if !reflect.DeepEqual(u.Spec.GPUProducts, []string{"NVIDIA-H200"}) || u.Status.Nodes != 0 || cl.updateRevs[0] != 1 {
		t.Fatalf("sent %+v at revision %d", u, cl.updateRevs[0])
	}
	// no --revision: replace whatever is stored
	out, err = runPool(t, cl, in, "update", "-f", "-", "-o", "yaml")
	if err != nil || cl.updateRevs[1] != 0 || !strings.Contains(out, "- NVIDIA-H200") || !strings.Contains(out, "nodes: 8") {
		t.Fatalf("update -o yaml: %v (revision %d)\n%s", err, cl.updateRevs[1], out)
	}
}

func TestPoolTable(t *testing.T) {
	var b bytes.Buffer
	if err := printPoolTable(&b, samplePools(), false); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NAME            CLUSTERS   NODES   GPUS    FREE   STATE                  QUEUES\n" +
		"training-h100   2          8       48/64   16     Ready                  research/nlp,research/vision\n" +
		"eu-spot         1          3       8/24    16     Cordoned,ScaleToZero   -\n"
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := printPoolTable(&b, samplePools(), true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.HasSuffix(lines[0], "QUEUES                         IDLE   SELECTOR    PRODUCTS                NODE-POOLS") ||
		!strings.HasSuffix(lines[1], "0      -           NVIDIA-H100-80GB-HBM3   train") ||
		!strings.HasSuffix(lines[2], "2      region=eu   -                       -") {
		t.Fatalf("wide table:\n%s", b.String())
	}
}

func TestPoolState(t *testing.T) {
	for _, tc := range []struct {
		spec v1alpha1.GPUPoolSpec
		want string
	}{
		{v1alpha1.GPUPoolSpec{}, "Ready"},
		{v1alpha1.GPUPoolSpec{Cordoned: true}, "Cordoned"},
		{v1alpha1.GPUPoolSpec{Cordoned: true, Drain: true}, "Draining"},
		{v1alpha1.GPUPoolSpec{Drain: true, ScaleToZero: true}, "Draining,ScaleToZero"},
		{v1alpha1.GPUPoolSpec{ScaleToZero: true}, "Ready,ScaleToZero"},
	} {
		if got := poolState(&v1alpha1.GPUPool{Spec: tc.spec}); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.spec, got, tc.want)
		}
	}
}

func TestPoolGetAndList(t *testing.T) {
	cl := newFakePools(t, samplePools()...)
	out, err := runPool(t, cl, "", "get", "eu-spot")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "eu-spot ") {
		t.Fatalf("get:\n%s", out)
	}
	out, err = runPool(t, cl, "", "get", "eu-spot", "-o", "yaml")
	if err != nil || !strings.Contains(out, "kind: GPUPool") || !strings.Contains(out, "scaleToZero: true") {
		t.Fatalf("get -o yaml: %v\n%s", err, out)
	}
	out, err = runPool(t, cl, "", "get", "eu-spot", "training-h100", "-o", "json")
	var list struct {
		Kind  string
		Items []v1alpha1.GPUPool
	}
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || list.Kind != "List" || len(list.Items) != 2 {
		t.Fatalf("get two -o json: %v\n%s", err, out)
	}
	if _, err := runPool(t, cl, "", "get", "gone"); err == nil || !strings.Contains(err.Error(), `get gpupool/gone: pool "gone" not found`) {
		t.Fatalf("get missing: %v", err)
	}

	out, err = runPool(t, cl, "", "list", "-o", "wide")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); err != nil || len(lines) != 3 || !strings.Contains(lines[0], "NODE-POOLS") ||
		!strings.HasPrefix(lines[1], "eu-spot ") || !strings.HasPrefix(lines[2], "training-h100 ") {
		t.Fatalf("list -o wide: %v\n%s", err, out)
	}
	out, err = runPool(t, cl, "", "list", "-o", "json")
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list.Items) != 2 {
		t.Fatalf("list -o json: %v\n%s", err, out)
	}
	out, err = runPool(t, newFakePools(t), "", "list")
	if err != nil || !strings.HasPrefix(out, "No GPU pools found: create one with `shoal pool create NAME") {
		t.Fatalf("empty list: %v %q", err, out)
	}
}

func TestPoolDescribe(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	if err := describePool(&b, samplePools()[1], now); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"Name:               eu-spot\n" +
		"State:              Cordoned,ScaleToZero\n" +
		"Cluster selector:   region=eu\n" +
		"GPU products:       <any>\n" +
		"Node pools:         <any>\n" +
		"Cordoned:           true\n" +
		"Drain:              false\n" +
		"Scale to zero:      true\n" +
		"Created:            2026-12-02T10:00:00Z (120m ago)\n" +
		"Clusters:           eu-1\n" +
		"Nodes:              3\n" +
		"GPUs:               24 (8 used, 16 free)\n" +
		"Queues:             <none bound>\n" +
		"Status updated:     <never>\n" +
		"Idle nodes:\n" +
		"  CLUSTER   NODE     IDLE SINCE             FOR\n" +
		"  eu-1      spot-a   2026-12-02T11:30:00Z   30m\n" +
		"  eu-1      spot-b   2026-12-02T11:55:00Z   5m\n" +
		"Drained nodes:\n" +
		"  eu-1/spot-c\n"
	if b.String() != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", b.String(), want)
	}

	cl := newFakePools(t, samplePools()...)
	out, err := runPool(t, cl, "", "describe", "training-h100")
	for _, s := range []string{"Cluster selector:   <every cluster>\n", "GPU products:       NVIDIA-H100-80GB-HBM3\n",
		"Queues:             research/nlp, research/vision\n", "Idle nodes:\n  <not published: scale-to-zero is off>\n",
		"Drained nodes:\n  <none>\n"} {
		if err != nil || !strings.Contains(out, s) {
			t.Fatalf("describe: %v, want %q in\n%s", err, s, out)
		}
	}
	if _, err := runPool(t, cl, "", "describe", "gone"); err == nil || !strings.Contains(err.Error(), "describe gpupool/gone: ") {
		t.Fatalf("describe missing: %v", err)
	}
}

func TestPoolStateCommands(t *testing.T) {
	cl := newFakePools(t, samplePools()[0])
	for _, step := range []struct {
		args  []string
		out   string
		state v1alpha1.GPUPoolSpec
	}{
		{[]string{"cordon"}, "gpupool/training-h100 cordoned (state Cordoned)\n", v1alpha1.GPUPoolSpec{Cordoned: true}},
		{[]string{"cordon"}, "gpupool/training-h100 unchanged (already cordoned; state Cordoned)\n", v1alpha1.GPUPoolSpec{Cordoned: true}},
		{[]string{"uncordon"}, "gpupool/training-h100 uncordoned (state Ready)\n", v1alpha1.GPUPoolSpec{}},
		{[]string{"drain"}, "gpupool/training-h100 draining (state Draining)\n", v1alpha1.GPUPoolSpec{Cordoned: true, Drain: true}},
		{[]string{"undrain"}, "gpupool/training-h100 undrained (state Cordoned)\n", v1alpha1.GPUPoolSpec{Cordoned: true}},
		{[]string{"drain"}, "gpupool/training-h100 draining (state Draining)\n", v1alpha1.GPUPoolSpec{Cordoned: true, Drain: true}},
		{[]string{"undrain", "--uncordon"}, "gpupool/training-h100 undrained and uncordoned (state Ready)\n", v1alpha1.GPUPoolSpec{}},
		{[]string{"drain"}, "gpupool/training-h100 draining (state Draining)\n", v1alpha1.GPUPoolSpec{Cordoned: true, Drain: true}},
		{[]string{"uncordon"}, "gpupool/training-h100 uncordoned (state Ready)\n", v1alpha1.GPUPoolSpec{}},
		{[]string{"scale-to-zero", "--on"}, "gpupool/training-h100 scale-to-zero on (state Ready,ScaleToZero)\n", v1alpha1.GPUPoolSpec{ScaleToZero: true}},
		{[]string{"scale-to-zero", "--off"}, "gpupool/training-h100 scale-to-zero off (state Ready)\n", v1alpha1.GPUPoolSpec{}},
	} {
		updates, rev := len(cl.updated), cl.revs["training-h100"]
		args := append([]string{step.args[0], "training-h100"}, step.args[1:]...)
		out, err := runPool(t, cl, "", args...)
		if err != nil || out != step.out {
			t.Fatalf("%v: %v %q, want %q", step.args, err, out, step.out)
		}
		got := cl.pools["training-h100"].Spec
		if got.Cordoned != step.state.Cordoned || got.Drain != step.state.Drain || got.ScaleToZero != step.state.ScaleToZero ||
			!reflect.DeepEqual(got.GPUProducts, []string{"NVIDIA-H100-80GB-HBM3"}) {
			t.Fatalf("%v: spec %+v, want %+v", step.args, got, step.state)
		}
		if strings.Contains(out, "unchanged") {
			if len(cl.updated) != updates {
				t.Fatalf("%v: updated a pool that did not change", step.args)
			}
			continue
		}
		if len(cl.updated) != updates+1 || cl.updateRevs[updates] != rev || cl.updated[updates].Status.Nodes != 0 {
			t.Fatalf("%v: sent %d updates at revisions %v (read %d), status %+v", step.args, len(cl.updated)-updates,
				cl.updateRevs, rev, cl.updated[len(cl.updated)-1].Status)
		}
	}
	if _, err := runPool(t, cl, "", "cordon", "gone"); err == nil || !strings.Contains(err.Error(), `get gpupool/gone: pool "gone" not found`) {
		t.Fatalf("cordon missing: %v", err)
	}
}

// racingPools changes the pool between the Get and the Update of a state
// command.
type racingPools struct{ *fakePools }

func (r racingPools) Get(ctx context.Context, req *shoalv1.GetPoolRequest, opts ...grpc.CallOption) (*shoalv1.Object, error) {
	obj, err := r.fakePools.Get(ctx, req, opts...)
	r.store(r.pools[req.Name])
	return obj, err
}

func TestPoolCordonRefusedWhenChangedMeanwhile(t *testing.T) {
	cl := racingPools{newFakePools(t, samplePools()[0])}
	_, err := runPool(t, cl, "", "cordon", "training-h100")
	if err == nil || !strings.Contains(err.Error(), "update gpupool/training-h100: ") ||
		!strings.Contains(err.Error(), "(it changed meanwhile: get it again and reapply your change)") {
		t.Fatalf("err = %v", err)
	}
}

func TestPoolDelete(t *testing.T) {
	cl := newFakePools(t, samplePools()...)
	out, err := runPool(t, cl, "", "delete", "eu-spot")
	if err != nil || out != "gpupool/eu-spot deleted\n" || !reflect.DeepEqual(cl.deleted, []string{"eu-spot"}) {
		t.Fatalf("delete: %v %q %v", err, out, cl.deleted)
	}
	_, err = runPool(t, cl, "", "delete", "training-h100")
	if err == nil || !strings.Contains(err.Error(), `delete gpupool/training-h100: queues [research/nlp research/vision] are bound to GPU pool "training-h100"`) {
		t.Fatalf("delete of a bound pool: %v", err)
	}
}

func TestPoolCompletion(t *testing.T) {
	cl := newFakePools(t, samplePools()...)
	dial := func(*cobra.Command) (shoalv1.PoolsClient, func(), error) { return cl, func() {}, nil }
	cmd := &cobra.Command{}
	cmd.SetContext(t.Context())
	names, dir := completePoolNames(dial, true)(cmd, []string{"x"}, "tr")
	if !reflect.DeepEqual(names, []string{"training-h100"}) || dir != cobra.ShellCompDirectiveNoFileComp {
		t.Fatalf("completed %v, %v", names, dir)
	}
	if names, _ = completePoolNames(dial, false)(cmd, nil, ""); !reflect.DeepEqual(names, []string{"eu-spot", "training-h100"}) {
		t.Fatalf("completed %v", names)
	}
	if names, _ = completePoolNames(dial, false)(cmd, []string{"eu-spot"}, ""); names != nil {
		t.Fatalf("completed a second argument: %v", names)
	}
	// the state commands complete one name
	root := newPoolCommand(dial)
	for _, sub := range []string{"cordon", "uncordon", "drain", "undrain", "scale-to-zero", "describe", "get", "delete"} {
		c, _, err := root.Find([]string{sub})
		if err != nil || c.ValidArgsFunction == nil {
			t.Errorf("%s: no name completion (%v)", sub, err)
		}
	}
}

// fakeQueueGet answers Get with q at revision 3.
type fakeQueueGet struct {
	shoalv1.QueuesClient
	q *v1alpha1.Queue
}

func (f fakeQueueGet) Get(context.Context, *shoalv1.GetQueueRequest, ...grpc.CallOption) (*shoalv1.Object, error) {
	b, err := json.Marshal(f.q)
	return &shoalv1.Object{Json: b, Revision: 3}, err
}

func TestQueuePoolFlag(t *testing.T) {
	// create: --pool sets spec.pools
	f := queueFlags{pools: []string{"training-h100", "eu-spot"}}
	qs, err := f.build(&cobra.Command{}, []string{"research/nlp"})
	if err != nil || len(qs) != 1 || !reflect.DeepEqual(qs[0].Spec.Pools, []string{"training-h100", "eu-spot"}) {
		t.Fatalf("build: %v %+v", err, qs)
	}
	if err := v1alpha1.ValidateQueue(qs[0]); len(err) > 0 {
		t.Fatalf("invalid queue: %v", err)
	}
	f.file = "q.yaml"
	if _, err := f.build(&cobra.Command{}, nil); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("-f with --pool: %v", err)
	}

	// update: --pool replaces the pools, --pool= unbinds, no --pool keeps them
	cl := fakeQueueGet{q: testqueue.New("research/nlp").Quota("h100", 8).Obj()}
	cl.q.Spec.Pools = []string{"old"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--pool", "a", "--pool", "b"}, []string{"a", "b"}},
		{[]string{"--pool="}, nil},
		{[]string{"--weight", "2"}, []string{"old"}},
	} {
		var f queueFlags
		cmd := &cobra.Command{}
		cmd.SetContext(t.Context())
		cmd.Flags().Int32Var(&f.weight, "weight", 0, "")
		poolFlag(cmd, &f, "set")
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		q, rev, err := mergeQueueFlags(cmd, cl, &f, []string{"research/nlp"})
		if err != nil || rev != 3 || len(q.Spec.Pools) != len(tc.want) || (len(tc.want) > 0 && !reflect.DeepEqual(q.Spec.Pools, tc.want)) {
			t.Fatalf("%v: %v, revision %d, pools %q, want %q", tc.args, err, rev, q.Spec.Pools, tc.want)
		}
	}
	var none queueFlags
	cmd := &cobra.Command{}
	poolFlag(cmd, &none, "set")
	if _, _, err := mergeQueueFlags(cmd, cl, &none, []string{"research/nlp"}); err == nil || !strings.Contains(err.Error(), "or --pool") {
		t.Fatalf("nothing to change: %v", err)
	}
}

func TestQueueTableShowsEffectivePools(t *testing.T) {
	qs := []*v1alpha1.Queue{
		testqueue.New("a").Obj(),
		testqueue.New("a/b").Obj(),
		testqueue.New("a/c").Obj(),
		testqueue.New("z").Obj(),
	}
	qs[0].Spec.Pools = []string{"p1", "p2"}
	qs[2].Spec.Pools = []string{"p3"}
	want := map[string]string{"a": "p1,p2", "a/b": "p1,p2 (from a)", "a/c": "p3", "z": "-"}
	for name, w := range want {
		if got := effectivePools(byName(qs), name); got != w {
			t.Errorf("queue %s: %q, want %q", name, got, w)
		}
	}
	var buf bytes.Buffer
	if err := printQueueTable(&buf, qs, byName(qs), true, time.Now()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if !strings.HasSuffix(lines[0], "\tPOOLS") && !strings.HasSuffix(lines[0], " POOLS") {
		t.Fatalf("header %q", lines[0])
	}
	if !strings.HasSuffix(lines[2], "p1,p2 (from a)") || !strings.HasSuffix(lines[4], " -") {
		t.Fatalf("wide table:\n%s", buf.String())
	}
}
