// SPDX-License-Identifier: Apache-2.0

package registry_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

var (
	shared *store.Store
	ca     *pki.CA
	prefix atomic.Int64
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "shoal-registry-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if ca, err = pki.LoadOrCreateCA(dir + "/pki"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if shared, err = store.Open(ctx, store.Config{DataDir: dir + "/etcd", Embedded: store.EmbeddedConfig{UnsafeNoFsync: true}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = shared.Close() }()
	return m.Run()
}

// newRegistry returns a registry over its own key prefix with a fake clock.
func newRegistry(t *testing.T) (*registry.Registry, *clocktesting.FakeClock, context.Context) {
	t.Helper()
	r, clk, ctx, _ := newRegistryStore(t)
	return r, clk, ctx
}

// newRegistryStore is newRegistry with its store, for tests that put
// records of other owners (reservations) next to the registry's.
func newRegistryStore(t *testing.T) (*registry.Registry, *clocktesting.FakeClock, context.Context, *store.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s, err := store.Open(ctx, store.Config{Endpoints: []string{shared.ClientURL()}, Prefix: fmt.Sprintf("/t%d/", prefix.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return registry.New(s, ca, registry.Config{Grace: 40 * time.Second, FenceTimeout: 5 * time.Minute, Clock: clk}), clk, ctx, s
}

func csr(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := pki.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	b, err := pki.NewCSR(key, cn, pki.AgentGroup)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func register(t *testing.T, r *registry.Registry, ctx context.Context, token, name, uid string) (*registry.Registration, error) {
	t.Helper()
	return r.Register(ctx, registry.RegisterRequest{Token: token, ClusterName: name, ClusterUID: uid, CSRPEM: csr(t, "")})
}

func TestRegisterRefusals(t *testing.T) {
	r, clk, ctx := newRegistry(t)
	tok := func(ttl time.Duration, uses int32) string {
		s, _, err := r.CreateToken(ctx, registry.TokenOptions{TTL: ttl, Usages: uses})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := tok(time.Hour, 5)
	if _, err := register(t, r, ctx, good, "eu1", "uid-1"); err != nil {
		t.Fatalf("first registration: %v", err)
	}
	expired := tok(time.Minute, 1)
	revoked := tok(time.Hour, 1)
	if err := r.RevokeToken(ctx, revoked[:6]); err != nil {
		t.Fatal(err)
	}
	once := tok(time.Hour, 1)
	if _, err := register(t, r, ctx, once, "us1", "uid-2"); err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * time.Minute)

	tests := []struct {
		name, token, cluster, uid string
		csr                       []byte
		want                      error
	}{
		{"malformed token", "nope", "c1", "u1", nil, registry.ErrInvalidToken},
		{"unknown token", "abcdef.0123456789abcdef", "c1", "u1", nil, registry.ErrInvalidToken},
		{"wrong secret", good[:7] + "0123456789abcdef", "c1", "u1", nil, registry.ErrInvalidToken},
		{"expired token", expired, "c1", "u1", nil, registry.ErrInvalidToken},
		{"revoked token", revoked, "c1", "u1", nil, registry.ErrInvalidToken},
		{"used-up token", once, "c1", "u1", nil, registry.ErrInvalidToken},
		{"same UID twice", good, "other", "uid-1", nil, registry.ErrUIDRegistered},
		{"taken name", good, "eu1", "uid-9", nil, registry.ErrClusterExists},
		{"bad name", good, "Bad_Name", "u1", nil, registry.ErrInvalid},
		{"empty UID", good, "c1", "", nil, registry.ErrInvalid},
		{"garbage CSR", good, "c1", "u1", []byte("not a csr"), registry.ErrInvalid},
		{"CSR for another cluster", good, "c1", "u1", csr(t, pki.AgentCommonName("c2")), registry.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.csr
			if c == nil {
				c = csr(t, "")
			}
			_, err := r.Register(ctx, registry.RegisterRequest{Token: tt.token, ClusterName: tt.cluster, ClusterUID: tt.uid, CSRPEM: c})
			if !errors.Is(err, tt.want) {
				t.Fatalf("error = %v, want %v", err, tt.want)
			}
		})
	}
	toks, err := r.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range toks {
		if tk.Name == good[:6] && tk.Status.Uses != 1 {
			t.Fatalf("token %s used %d times, want 1 (refused registrations must not consume it)", tk.Name, tk.Status.Uses)
		}
	}
}

func TestRegisterConcurrentTokenUse(t *testing.T) {
	r, _, ctx := newRegistry(t)
	const uses, clients = 3, 8
	token, _, err := r.CreateToken(ctx, registry.TokenOptions{TTL: time.Hour, Usages: uses})
	if err != nil {
		t.Fatal(err)
	}
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range clients {
		c := csr(t, "")
		wg.Go(func() {
			_, err := r.Register(ctx, registry.RegisterRequest{Token: token, ClusterName: fmt.Sprintf("c%d", i), ClusterUID: fmt.Sprintf("u%d", i), CSRPEM: c})
			if err == nil {
				ok.Add(1)
			} else if !errors.Is(err, registry.ErrInvalidToken) {
				t.Errorf("cluster c%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != uses {
		t.Fatalf("%d registrations succeeded with a %d-use token", ok.Load(), uses)
	}
	list, err := r.ListClusters(ctx, store.ListOptions{}, "")
	if err != nil || len(list.Items) != uses {
		t.Fatalf("%d clusters stored (%v), want %d", len(list.Items), err, uses)
	}
}

func TestAgentCertificateRevokedByRemove(t *testing.T) {
	r, _, ctx := newRegistry(t)
	token, _, _ := r.CreateToken(ctx, registry.TokenOptions{Usages: 2})
	reg, err := register(t, r, ctx, token, "eu1", "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := pki.ParseCertificatePEM(reg.CertificatePEM)
	id, err := pki.IdentityOf(cert)
	if err != nil || id.Role != pki.RoleAgent || id.Cluster != "eu1" {
		t.Fatalf("identity = %+v, %v; want agent of eu1", id, err)
	}
	if err := r.AuthorizeAgent(ctx, "eu1", id.Serial); err != nil {
		t.Fatalf("fresh certificate refused: %v", err)
	}
	if err := r.Remove(ctx, "eu1"); err != nil {
		t.Fatal(err)
	}
	if err := r.AuthorizeAgent(ctx, "eu1", id.Serial); !errors.Is(err, registry.ErrCertificateRevoked) {
		t.Fatalf("removed cluster's certificate: %v, want ErrCertificateRevoked", err)
	}
	if _, err := register(t, r, ctx, token, "eu1", "uid-1"); err != nil {
		t.Fatalf("registering again after remove: %v", err)
	}
	if err := r.AuthorizeAgent(ctx, "eu1", id.Serial); !errors.Is(err, registry.ErrCertificateRevoked) {
		t.Fatalf("old certificate after re-registration: %v, want ErrCertificateRevoked", err)
	}
	// Writes check the serial again (a certificate revoked after the
	// interceptor authorized it).
	if _, err := r.Heartbeat(ctx, "eu1", id.Serial, registry.Beat{AgentVersion: "v1", ClusterReachable: true, Message: "", HubClusterReachable: ptr.To(true)}); !errors.Is(err, registry.ErrCertificateRevoked) {
		t.Fatalf("heartbeat with the old certificate: %v, want ErrCertificateRevoked", err)
	}
	if _, err := r.ReportInventory(ctx, "eu1", id.Serial, "s", 1, []byte(`{"nodes":[]}`)); !errors.Is(err, registry.ErrCertificateRevoked) {
		t.Fatalf("inventory with the old certificate: %v, want ErrCertificateRevoked", err)
	}
}

func TestInventoryOrdering(t *testing.T) {
	r, _, ctx := newRegistry(t)
	token, _, _ := r.CreateToken(ctx, registry.TokenOptions{})
	if _, err := register(t, r, ctx, token, "eu1", "uid-1"); err != nil {
		t.Fatal(err)
	}
	inv := func(gpus int) []byte {
		return fmt.Appendf(nil, `{"name":"eu1","nodes":[{"name":"n1","product":"H100","capacityGPUs":%d,"gpus":%d,"ready":true}]}`, gpus, gpus)
	}
	steps := []struct {
		session string
		gen     int64
		gpus    int
		want    int64
	}{
		{"a", 1, 8, 1},
		{"a", 3, 6, 3},
		{"a", 2, 4, 3}, // older report of the same session: ignored
		{"a", 3, 4, 3}, // same generation: ignored
		{"b", 1, 2, 1}, // restarted agent: accepted although its generation is lower
	}
	for i, s := range steps {
		got, err := r.ReportInventory(ctx, "eu1", "", s.session, s.gen, inv(s.gpus))
		if err != nil || got != s.want {
			t.Fatalf("step %d: accepted generation %d, %v; want %d", i, got, err, s.want)
		}
	}
	cl, _, err := r.GetCluster(ctx, "eu1")
	if err != nil || cl.Status.Inventory.GPUs != 2 || cl.Status.Inventory.Products["H100"] != 2 {
		t.Fatalf("summary = %+v, %v; want 2 H100 from the last accepted report", cl.Status.Inventory, err)
	}
	if _, err := r.ReportInventory(ctx, "eu1", "", "b", 2, []byte("{")); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("bad JSON: %v, want ErrInvalid", err)
	}
	neg := []byte(`{"nodes":[{"name":"n1","gpus":-8,"ready":true}]}`)
	if _, err := r.ReportInventory(ctx, "eu1", "", "b", 3, neg); !errors.Is(err, registry.ErrInvalid) || !strings.Contains(err.Error(), "gpus: -8") {
		t.Fatalf("negative GPU count: %v, want ErrInvalid naming the node's gpus", err)
	}
	if cl, _, err := r.GetCluster(ctx, "eu1"); err != nil || cl.Status.Inventory.GPUs != 2 {
		t.Fatalf("after a refused report the summary is %+v, %v; want the last accepted one (2 GPUs)", cl.Status.Inventory, err)
	}
}

func TestLiveness(t *testing.T) {
	r, clk, ctx := newRegistry(t)
	token, _, _ := r.CreateToken(ctx, registry.TokenOptions{})
	if _, err := register(t, r, ctx, token, "eu1", "uid-1"); err != nil {
		t.Fatal(err)
	}
	state := func() v1alpha1.ClusterState {
		t.Helper()
		if err := r.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		cl, _, err := r.GetCluster(ctx, "eu1")
		if err != nil {
			t.Fatal(err)
		}
		return cl.Status.State
	}
	expect := func(want v1alpha1.ClusterState) {
		t.Helper()
		if got := state(); got != want {
			t.Fatalf("state = %s, want %s", got, want)
		}
	}
	expect(v1alpha1.ClusterPending)
	if _, err := r.Heartbeat(ctx, "eu1", "", registry.Beat{AgentVersion: "v1", ClusterReachable: true, Message: "", HubClusterReachable: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	expect(v1alpha1.ClusterPending) // no inventory yet
	if _, err := r.ReportInventory(ctx, "eu1", "", "s", 1, []byte(`{"nodes":[]}`)); err != nil {
		t.Fatal(err)
	}
	expect(v1alpha1.ClusterReady)
	if _, _, err := r.Cordon(ctx, "eu1", true); err != nil {
		t.Fatal(err)
	}
	expect(v1alpha1.ClusterCordoned)
	if _, _, err := r.Cordon(ctx, "eu1", false); err != nil {
		t.Fatal(err)
	}
	clk.Step(40 * time.Second) // stored times have whole seconds: the grace counts from the end of the beat's second
	expect(v1alpha1.ClusterReady)
	clk.Step(1500 * time.Millisecond)
	expect(v1alpha1.ClusterNotReady)
	if _, err := r.Heartbeat(ctx, "eu1", "", registry.Beat{AgentVersion: "v1", ClusterReachable: false, Message: "connection refused", HubClusterReachable: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	expect(v1alpha1.ClusterNotReady) // beats, but cannot reach its own cluster
	if _, err := r.Heartbeat(ctx, "eu1", "", registry.Beat{AgentVersion: "v1", ClusterReachable: true, Message: "", HubClusterReachable: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	expect(v1alpha1.ClusterReady)
	clk.Step(5*time.Minute + 2*time.Second)
	expect(v1alpha1.ClusterNotReady) // past the fence timeout, not yet its margin
	clk.Step(registry.DefaultFenceMargin)
	expect(v1alpha1.ClusterLost)
}

func TestOverlappingNamesRefused(t *testing.T) {
	r, _, ctx := newRegistry(t)
	token, _, _ := r.CreateToken(ctx, registry.TokenOptions{Usages: 100})
	if _, err := register(t, r, ctx, token, "eu", "uid-eu"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"eu-west", "eu-1-b"} {
		if _, err := register(t, r, ctx, token, name, "uid-"+name); !errors.Is(err, registry.ErrClusterExists) {
			t.Errorf("%s next to eu: %v, want ErrClusterExists", name, err)
		}
	}
	if _, err := register(t, r, ctx, token, "euwest", "uid-euwest"); err != nil {
		t.Errorf("euwest does not overlap eu: %v", err)
	}
	if _, err := register(t, r, ctx, token, "us-east", "uid-us-east"); err != nil {
		t.Fatal(err)
	}
	if _, err := register(t, r, ctx, token, "us", "uid-us"); !errors.Is(err, registry.ErrClusterExists) {
		t.Errorf("us next to us-east: %v, want ErrClusterExists", err)
	}
	if err := r.Remove(ctx, "us-east"); err != nil {
		t.Fatal(err)
	}
	if _, err := register(t, r, ctx, token, "us", "uid-us"); err != nil {
		t.Errorf("us after us-east was removed: %v", err)
	}

	// Racing registrations of overlapping names: exactly one wins.
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i, name := range []string{"ap", "ap-south", "ap-north", "ap-south-1"} {
		c := csr(t, "")
		wg.Go(func() {
			_, err := r.Register(ctx, registry.RegisterRequest{Token: token, ClusterName: name, ClusterUID: fmt.Sprint("race-", i), CSRPEM: c})
			if err == nil {
				ok.Add(1)
			} else if !errors.Is(err, registry.ErrClusterExists) {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	wg.Wait()
	if n := ok.Load(); n < 1 || n > 2 {
		// "ap-south" and "ap-north" may both win when "ap" loses; "ap" excludes all others.
		t.Fatalf("%d overlapping registrations succeeded", n)
	}
	list, _ := r.ListClusters(ctx, store.ListOptions{}, "")
	var names []string
	for _, c := range list.Items {
		names = append(names, c.Name)
	}
	for i, a := range names {
		for _, b := range names[i+1:] {
			if strings.HasPrefix(b, a+"-") || strings.HasPrefix(a, b+"-") {
				t.Errorf("overlapping clusters %s and %s both registered", a, b)
			}
		}
	}
}

func TestPruneTokens(t *testing.T) {
	r, clk, ctx := newRegistry(t)
	if _, _, err := r.CreateToken(ctx, registry.TokenOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * time.Hour)
	if _, _, err := r.CreateToken(ctx, registry.TokenOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	clk.Step(registry.TokenRetention)
	n, err := r.PruneTokens(ctx)
	if err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want the one expired more than %s ago", n, err, registry.TokenRetention)
	}
	toks, _ := r.ListTokens(ctx)
	if len(toks) != 1 {
		t.Fatalf("%d tokens left, want 1", len(toks))
	}
}

func TestLargeInventory(t *testing.T) {
	r, _, ctx := newRegistry(t)
	token, _, _ := r.CreateToken(ctx, registry.TokenOptions{})
	if _, err := register(t, r, ctx, token, "big", "uid-big"); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"name":"big","nodes":[`)
	for i := range 12000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"gpu-node-%05d","product":"NVIDIA-H100-80GB-HBM3","memoryMiB":81559,"capacityGPUs":8,"gpus":8,"usedGPUs":%d,"rack":"rack-%03d","ready":true}`, i, i%9, i/32)
	}
	b.WriteString("]}")
	if b.Len() < 1536*1024 {
		t.Fatalf("test inventory of %d bytes does not exceed etcd's 1.5 MiB request limit", b.Len())
	}
	if _, err := r.ReportInventory(ctx, "big", "", "s", 1, []byte(b.String())); err != nil {
		t.Fatalf("12,000-node inventory (%d bytes): %v", b.Len(), err)
	}
	rec, _, err := r.GetInventory(ctx, "big")
	if err != nil || string(rec.Inventory) != b.String() {
		t.Fatalf("stored inventory differs (%v)", err)
	}
	cl, _, _ := r.GetCluster(ctx, "big")
	if cl.Status.Inventory.GPUs != 96000 {
		t.Fatalf("summary GPUs %d, want 96000", cl.Status.Inventory.GPUs)
	}
}

func TestListClustersSelector(t *testing.T) {
	r, _, ctx := newRegistry(t)
	token, _, _ := r.CreateToken(ctx, registry.TokenOptions{Usages: 3})
	for i, region := range []string{"eu", "eu", "us"} {
		_, err := r.Register(ctx, registry.RegisterRequest{Token: token, ClusterName: fmt.Sprintf("c%d", i), ClusterUID: fmt.Sprint(i),
			CSRPEM: csr(t, ""), Labels: map[string]string{"region": region}})
		if err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		selector string
		want     int
		bad      bool
	}{
		{"", 3, false},
		{"region=eu", 2, false},
		{"region!=eu", 1, false},
		{"region in (eu,us)", 3, false},
		{"region notin (eu)", 1, false},
		{"region notin (eu,us)", 0, false},
		{"zone", 0, false},
		{"region", 3, false},
		{"!zone", 3, false},
		{"!region", 0, false},
		{"region in (eu),!zone", 2, false},
		{"region in (eu", 0, true},
	}
	for _, tt := range tests {
		list, err := r.ListClusters(ctx, store.ListOptions{}, tt.selector)
		if tt.bad {
			if !errors.Is(err, registry.ErrInvalid) {
				t.Errorf("selector %q: %v, want ErrInvalid", tt.selector, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("selector %q: %v", tt.selector, err)
			continue
		}
		if len(list.Items) != tt.want {
			t.Errorf("selector %q: %d clusters, want %d", tt.selector, len(list.Items), tt.want)
		}
	}
}
