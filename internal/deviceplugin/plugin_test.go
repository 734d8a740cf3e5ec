// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// fakeKubelet is the kubelet's Registration service on dir/kubelet.sock.
// Like the kubelet it checks the version and connects to the plugin's
// endpoint before it answers, so a plugin that registers before it serves
// fails.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	dir  string
	reqs chan *pluginapi.RegisterRequest
	srv  *grpc.Server
}

func startKubelet(t *testing.T, dir string) *fakeKubelet {
	t.Helper()
	k := &fakeKubelet{dir: dir, reqs: make(chan *pluginapi.RegisterRequest, 8), srv: grpc.NewServer()}
	pluginapi.RegisterRegistrationServer(k.srv, k)
	ln, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = k.srv.Serve(ln) }()
	t.Cleanup(k.srv.Stop)
	return k
}

func (k *fakeKubelet) Register(ctx context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	if r.Version != pluginapi.Version {
		return nil, status.Errorf(codes.InvalidArgument, "version %q", r.Version)
	}
	c := dialPlugin(filepath.Join(k.dir, r.Endpoint))
	defer func() { _ = c.Close() }()
	if _, err := pluginapi.NewDevicePluginClient(c).GetDevicePluginOptions(ctx, &pluginapi.Empty{}); err != nil {
		return nil, err
	}
	k.reqs <- r
	return &pluginapi.Empty{}, nil
}

// restart stops the kubelet and, as a starting kubelet does, removes every
// socket in the directory; then it starts a new one.
func (k *fakeKubelet) restart(t *testing.T) *fakeKubelet {
	k.srv.Stop()
	entries, err := os.ReadDir(k.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type()&os.ModeSocket != 0 {
			_ = os.Remove(filepath.Join(k.dir, e.Name()))
		}
	}
	return startKubelet(t, k.dir)
}

func (k *fakeKubelet) registration(t *testing.T) *pluginapi.RegisterRequest {
	t.Helper()
	select {
	case r := <-k.reqs:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin did not register")
		return nil
	}
}

func dialPlugin(sock string) *grpc.ClientConn {
	c, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err) // only a malformed target fails here
	}
	return c
}

// socketDir is a short temporary directory (unix socket paths are limited
// to 108 bytes).
func socketDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "dp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// startPlugin runs a plugin of n devices GPU-n1-* in dir until the test ends.
func startPlugin(t *testing.T, dir string, n int, healthFile string) *Plugin {
	t.Helper()
	p, err := New(Config{SocketDir: dir, Resource: DefaultResource, IDs: DeviceIDs("GPU-n1", n),
		HealthFile: healthFile, HealthInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return p
}

// listAndWatch opens the stream on the registered endpoint.
func listAndWatch(t *testing.T, dir string, r *pluginapi.RegisterRequest) grpc.ServerStreamingClient[pluginapi.ListAndWatchResponse] {
	t.Helper()
	c := dialPlugin(filepath.Join(dir, r.Endpoint))
	t.Cleanup(func() { _ = c.Close() })
	s, err := pluginapi.NewDevicePluginClient(c).ListAndWatch(t.Context(), &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// health is "ID=Health" of each device, in order.
func health(t *testing.T, s grpc.ServerStreamingClient[pluginapi.ListAndWatchResponse]) []string {
	t.Helper()
	resp, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range resp.Devices {
		out = append(out, d.ID+"="+d.Health)
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRegistersAndListsDevices(t *testing.T) {
	dir := socketDir(t)
	k := startKubelet(t, dir)
	startPlugin(t, dir, 4, "")
	r := k.registration(t)
	if r.ResourceName != "nvidia.com/gpu" || r.Endpoint != "shoal-nvidia.com-gpu.sock" || r.Version != "v1beta1" {
		t.Errorf("registered %+v", r)
	}
	if r.Options.GetPreStartRequired() || r.Options.GetGetPreferredAllocationAvailable() {
		t.Errorf("options %+v, want none", r.Options)
	}
	want := []string{"GPU-n1-0=Healthy", "GPU-n1-1=Healthy", "GPU-n1-2=Healthy", "GPU-n1-3=Healthy"}
	if got := health(t, listAndWatch(t, dir, r)); !equal(got, want) {
		t.Errorf("devices %v, want %v", got, want)
	}
}

func TestAllocateSetsVisibleDevices(t *testing.T) {
	dir := socketDir(t)
	k := startKubelet(t, dir)
	startPlugin(t, dir, 4, "")
	c := dialPlugin(filepath.Join(dir, k.registration(t).Endpoint))
	defer func() { _ = c.Close() }()
	client := pluginapi.NewDevicePluginClient(c)
	resp, err := client.Allocate(t.Context(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{"GPU-n1-3", "GPU-n1-1"}}, {DevicesIds: []string{"GPU-n1-0"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ContainerResponses) != 2 {
		t.Fatalf("%d container responses, want 2", len(resp.ContainerResponses))
	}
	for i, want := range []string{"GPU-n1-3,GPU-n1-1", "GPU-n1-0"} {
		cr := resp.ContainerResponses[i]
		if len(cr.Envs) != 1 || cr.Envs["NVIDIA_VISIBLE_DEVICES"] != want {
			t.Errorf("container %d: envs %v, want only NVIDIA_VISIBLE_DEVICES=%s", i, cr.Envs, want)
		}
		if len(cr.Mounts)+len(cr.Devices)+len(cr.Annotations)+len(cr.CdiDevices) != 0 {
			t.Errorf("container %d: %+v, want nothing but the env", i, cr)
		}
	}
	_, err = client.Allocate(t.Context(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{"GPU-n2-0"}}}})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("allocating another node's device: %v, want InvalidArgument", err)
	}
}

func TestHealthChangeIsStreamed(t *testing.T) {
	dir := socketDir(t)
	healthFile := filepath.Join(dir, "unhealthy")
	k := startKubelet(t, dir)
	startPlugin(t, dir, 3, healthFile)
	s := listAndWatch(t, dir, k.registration(t))
	if got, want := health(t, s), []string{"GPU-n1-0=Healthy", "GPU-n1-1=Healthy", "GPU-n1-2=Healthy"}; !equal(got, want) {
		t.Fatalf("devices %v, want %v", got, want)
	}
	if err := os.WriteFile(healthFile, []byte("# broken\nGPU-n1-2\nGPU-other-9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := health(t, s), []string{"GPU-n1-0=Healthy", "GPU-n1-1=Healthy", "GPU-n1-2=Unhealthy"}; !equal(got, want) {
		t.Errorf("after marking GPU-n1-2: %v, want %v", got, want)
	}
	if err := os.Remove(healthFile); err != nil {
		t.Fatal(err)
	}
	if got, want := health(t, s), []string{"GPU-n1-0=Healthy", "GPU-n1-1=Healthy", "GPU-n1-2=Healthy"}; !equal(got, want) {
		t.Errorf("after removing the health file: %v, want %v", got, want)
	}
}

func TestRegistersAgainWhenKubeletRestarts(t *testing.T) {
	dir := socketDir(t)
	k := startKubelet(t, dir)
	startPlugin(t, dir, 2, "")
	k.registration(t)
	k2 := k.restart(t)
	r := k2.registration(t)
	if r.ResourceName != "nvidia.com/gpu" {
		t.Errorf("registered again as %q", r.ResourceName)
	}
	if got, want := health(t, listAndWatch(t, dir, r)), []string{"GPU-n1-0=Healthy", "GPU-n1-1=Healthy"}; !equal(got, want) {
		t.Errorf("after the restart: devices %v, want %v", got, want)
	}
}

func TestWaitsForTheKubelet(t *testing.T) {
	dir := socketDir(t)
	p := startPlugin(t, dir, 1, "")
	waitFor(t, func() bool { _, err := os.Stat(p.Socket()); return err == nil })
	k := startKubelet(t, dir)
	if r := k.registration(t); r.Endpoint != filepath.Base(p.Socket()) {
		t.Errorf("endpoint %q, want %q", r.Endpoint, filepath.Base(p.Socket()))
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met in 10s")
}

func TestPreferredAllocation(t *testing.T) {
	s := &service{devs: newDevices(DeviceIDs("GPU-n1", 4))}
	resp, err := s.GetPreferredAllocation(t.Context(), &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{
		{AvailableDeviceIDs: []string{"GPU-n1-0", "GPU-n1-2", "GPU-n1-3"}, MustIncludeDeviceIDs: []string{"GPU-n1-3"}, AllocationSize: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.ContainerResponses[0].DeviceIDs; !equal(got, []string{"GPU-n1-3", "GPU-n1-0"}) {
		t.Errorf("preferred %v, want [GPU-n1-3 GPU-n1-0]", got)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	if _, err := New(Config{SocketDir: "/x", Resource: "gpu"}); err == nil {
		t.Error("resource without a domain accepted")
	}
	if _, err := New(Config{Resource: DefaultResource}); err == nil {
		t.Error("no socket directory accepted")
	}
}
