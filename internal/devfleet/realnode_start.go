// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/internal/images"
)

// kubeletDevicePluginDir is where every kubelet looks for device plugins.
const kubeletDevicePluginDir = "/var/lib/kubelet/device-plugins"

// cgroupControllers are the cgroup v1 hierarchies a kubelet's cgroup root
// must exist in before it starts.
var cgroupControllers = []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "devices", "freezer", "blkio", "systemd", "hugetlb"}

// writeImages builds the pause image and the extra images into dir and
// returns the archive paths.
func writeImages(o *RealNodeOptions, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	specs := append([]images.Spec{{Ref: PauseImage, Binary: o.PauseBinary}}, o.Images...)
	out := make([]string, 0, len(specs))
	for i, s := range specs {
		file := filepath.Join(dir, strconv.Itoa(i)+"-"+filepath.Base(s.Binary)+".tar")
		if err := images.WriteArchive(s, file); err != nil {
			return nil, err
		}
		out = append(out, file)
	}
	for _, a := range o.Archives {
		if _, err := os.Stat(a); err != nil {
			return nil, fmt.Errorf("real nodes: image archive: %w", err)
		}
	}
	return append(out, o.Archives...), nil
}

// startRealNodes starts the cluster's CoreDNS and then its real nodes, all
// at once, and returns when every one is Ready with its GPUs allocatable.
func (c *Cluster) startRealNodes(ctx context.Context, f *Fleet, cs kubernetes.Interface) error {
	if len(c.RealNodes) == 0 {
		return nil
	}
	start := time.Now()
	if err := c.startCoreDNS(ctx, f); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(c.RealNodes))
	for i, n := range c.RealNodes {
		wg.Go(func() { errs[i] = c.startRealNode(ctx, f, cs, i, n) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	f.stepTo("realnodes/"+c.Name, 1, "cluster "+c.Name+": real nodes Ready")
	f.progress("cluster %s: %d real nodes Ready (kubelet %s on containerd, CoreDNS at %s) in %s", c.Name, len(c.RealNodes),
		"v1.37.2", c.dnsIP(), time.Since(start).Round(100*time.Millisecond))
	return nil
}

func (c *Cluster) startRealNode(ctx context.Context, f *Fleet, cs kubernetes.Interface, index int, n *RealNode) error {
	o := f.opts.RealNodes
	bin := func(b string) string { return filepath.Join(f.opts.BinDir, b) }
	if err := writeRealNodeConfig(c, n, f.opts.BinDir, f.pki(), o.Runc, o.CNIBinDir); err != nil {
		return err
	}
	if err := makeCgroups(n.CgroupRoot); err != nil {
		return fmt.Errorf("real node %s: %w", n.Name, err)
	}
	// kubelet v1.37 serves the device-plugin registration socket at the
	// fixed path /var/lib/kubelet/device-plugins/kubelet.sock whatever its
	// --root-dir, so each node's containerd and kubelet share a mount
	// namespace of their own in which that directory is the node's
	// DevicePluginDir; the device plugins, on the host, use the same
	// directory by its real path.
	if err := os.MkdirAll(n.DevicePluginDir(), 0o755); err != nil {
		return err
	}
	if len(filepath.Join(n.DevicePluginDir(), "shoal-nvidia.com-mig-3g.40gb.sock")) > 107 {
		return fmt.Errorf("real node %s: fleet directory %s is too deep for its Unix sockets (at most 107 bytes): use a shorter one", n.Name, f.Dir)
	}
	// A mount point removed on the host is detached in every namespace:
	// the marker keeps the host's directory from being removed while empty.
	if err := os.MkdirAll(kubeletDevicePluginDir, 0o755); err != nil {
		return err
	}
	marker := filepath.Join(kubeletDevicePluginDir, ".shoal-dev-mountpoint")
	if err := os.WriteFile(marker, []byte("the local fleet's real nodes mount their own directory here, each in its own mount namespace\n"), 0o644); err != nil {
		return err
	}
	// The kubelet's --root-dir is made an rshared mount of its own in the
	// namespace before the kubelet starts. Otherwise the kubelet bind-mounts
	// it onto itself at start (MakeRShared) while its pod-resources server,
	// started concurrently, creates its socket there and renames it into
	// place: a rename whose two path lookups straddle that mount fails with
	// "invalid cross-device link" and the kubelet exits (seen once in CI).
	ctrd, err := f.add(c, "containerd-"+n.Name, "/usr/bin/unshare",
		nodeNamespaceArgs(n, bin("containerd"), "--config", filepath.Join(n.Dir, "containerd.toml")))
	if err != nil {
		return err
	}
	if err := poll(ctx, 60*time.Second, 100*time.Millisecond, ctrd, func() bool {
		return exec.CommandContext(ctx, bin("ctr"), "--address", n.Socket(), "version").Run() == nil
	}); err != nil {
		return fmt.Errorf("real node %s: containerd: %w", n.Name, err)
	}
	for _, img := range f.images {
		out, err := exec.CommandContext(ctx, bin("ctr"), "--address", n.Socket(), "-n", "k8s.io", "images", "import", img).CombinedOutput()
		if err != nil {
			return fmt.Errorf("real node %s: import %s: %v: %s", n.Name, img, err, out)
		}
	}
	kubelet, err := f.add(c, "kubelet-"+n.Name, "/usr/bin/nsenter", []string{
		"--mount=/proc/" + strconv.Itoa(ctrd.Pid) + "/ns/mnt", "--", bin("kubelet"),
		"--config=" + filepath.Join(n.Dir, "kubelet.yaml"), "--kubeconfig=" + filepath.Join(n.Dir, "kubeconfig"),
		"--root-dir=" + n.KubeletRoot(), "--cert-dir=" + filepath.Join(n.Dir, "kubelet-pki"),
		"--hostname-override=" + n.Name, "--node-ip=" + n.IP, "--v=0",
	})
	if err != nil {
		return err
	}
	var node *corev1.Node
	if err := poll(ctx, 120*time.Second, 200*time.Millisecond, kubelet, func() bool {
		node, err = cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		return err == nil
	}); err != nil {
		return fmt.Errorf("real node %s: kubelet registration: %w", n.Name, err)
	}
	p := mustProfile(c.Profile)
	if err := labelRealNode(ctx, cs, BuildNodes(c.Name, c.Region, p, index+1)[index]); err != nil {
		return fmt.Errorf("real node %s: %w", n.Name, err)
	}
	want := deviceResources(p)
	for _, r := range want {
		args := []string{"--kubelet-socket-dir=" + n.DevicePluginDir(), "--resource=" + r.name,
			"--devices=" + strconv.Itoa(r.count), "--device-prefix=" + r.prefix(n.Name)}
		if _, err := f.add(c, "deviceplugin-"+n.Name+"-"+r.short(), o.DevicePluginBinary, args); err != nil {
			return err
		}
	}
	if err := poll(ctx, 120*time.Second, 200*time.Millisecond, kubelet, func() bool {
		node, err = cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		return err == nil && nodeReady(node) && hasAllocatable(node, want)
	}); err != nil {
		return fmt.Errorf("real node %s: waiting for Ready with its devices allocatable: %w", n.Name, err)
	}
	return nil
}

// nodeNamespaceArgs are unshare's arguments to run cmd in a new mount
// namespace of node n: its DevicePluginDir mounted at the kubelet's fixed
// device-plugin directory, and its kubelet root an rshared mount of its
// own (see startRealNode).
func nodeNamespaceArgs(n *RealNode, cmd ...string) []string {
	return append([]string{"--mount", "--propagation", "private", "--",
		"/bin/sh", "-c", `mkdir -p ` + kubeletDevicePluginDir + ` && mount --bind "$0" ` + kubeletDevicePluginDir +
			` && root="$1" && shift && mkdir -p "$root" && mount --bind "$root" "$root" && mount --make-rshared "$root" && exec "$@"`,
		n.DevicePluginDir(), n.KubeletRoot()}, cmd...)
}

// labelRealNode puts the profile's GFD and topology labels on the node the
// kubelet registered, as GPU feature discovery does on a real cluster.
func labelRealNode(ctx context.Context, cs kubernetes.Interface, tmpl *corev1.Node) error {
	labels := map[string]string{}
	for k, v := range tmpl.Labels {
		if k == "type" || k == corev1.LabelArchStable || k == corev1.LabelOSStable {
			continue // type=kwok marks fake nodes; the kubelet sets the real arch and os
		}
		labels[k] = v
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Nodes().Patch(ctx, tmpl.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// deviceResource is one extended resource a device plugin advertises.
type deviceResource struct {
	name  string
	count int
}

func (r deviceResource) short() string {
	if r.name == ResourceGPU {
		return "gpu"
	}
	return filepath.Base(r.name)
}

// prefix makes device IDs unique in the fleet: GPU-<node>-<i> (or MIG-...).
func (r deviceResource) prefix(node string) string {
	if r.name == ResourceGPU {
		return "GPU-" + node
	}
	return "MIG-" + r.short() + "-" + node
}

// deviceResources lists the profile's nvidia.com/* resources, sorted.
func deviceResources(p *Profile) []deviceResource {
	var out []deviceResource
	for k, v := range p.Resources {
		if len(k) > len("nvidia.com/") && k[:len("nvidia.com/")] == "nvidia.com/" {
			n, _ := strconv.Atoi(v)
			out = append(out, deviceResource{name: k, count: n})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasAllocatable(n *corev1.Node, want []deviceResource) bool {
	for _, r := range want {
		q, ok := n.Status.Allocatable[corev1.ResourceName(r.name)]
		if !ok || q.Cmp(*resource.NewQuantity(int64(r.count), resource.DecimalSI)) != 0 {
			return false
		}
	}
	return true
}

// makeCgroups creates the kubelet's cgroup root in every v1 hierarchy there is.
func makeCgroups(root string) error {
	for _, ctl := range cgroupControllers {
		base := filepath.Join("/sys/fs/cgroup", ctl)
		if _, err := os.Stat(base); err != nil {
			continue
		}
		if err := os.MkdirAll(filepath.Join(base, root), 0o755); err != nil {
			return fmt.Errorf("create cgroup %s in %s: %w", root, ctl, err)
		}
	}
	return nil
}
