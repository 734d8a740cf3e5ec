// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestRealNodeNetIsDisjointAcrossSlotsClustersAndNodes(t *testing.T) {
	seen := map[string]string{}
	bridges := map[string]bool{}
	for s := range 3 {
		for c := range 4 {
			for n := range 8 {
				br, subnet, ip, err := realNodeNet(s, c, n)
				if err != nil {
					t.Fatal(err)
				}
				if len(br) > 15 {
					t.Fatalf("bridge name %q longer than IFNAMSIZ-1", br)
				}
				if prev, ok := seen[subnet]; ok {
					t.Fatalf("subnet %s given to %s and %s", subnet, prev, br)
				}
				if !strings.HasPrefix(ip, strings.TrimSuffix(subnet, "0/24")) || !strings.HasSuffix(ip, ".1") {
					t.Fatalf("gateway %s not the .1 of %s", ip, subnet)
				}
				seen[subnet], bridges[br] = br, true
			}
		}
	}
	if len(bridges) != 3*4*8 {
		t.Fatalf("bridge names collide: %d distinct of %d", len(bridges), 3*4*8)
	}
	if _, _, _, err := realNodeNet(0, 0, 8); err == nil {
		t.Fatal("node 8 accepted: the subnet would overlap the next cluster's")
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/a/b`: "/a/b", `/a\040b`: "/a b", `/x\011y\134`: "/x\ty\\"} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDeviceResourcesOfProfiles(t *testing.T) {
	got := deviceResources(mustProfile("a100-mig"))
	if len(got) != 3 || got[0].name != ResourceGPU || got[0].count != 2 || got[1].name != ResourceMIG1g10gb || got[1].count != 28 {
		t.Fatalf("a100-mig resources = %+v", got)
	}
	if p := got[1].prefix("n1"); p != "MIG-mig-1g.10gb-n1" {
		t.Fatalf("prefix = %q", p)
	}
	if got := deviceResources(mustProfile("hgx-h100")); len(got) != 1 || got[0].count != 8 || got[0].prefix("n") != "GPU-n" {
		t.Fatalf("hgx-h100 resources = %+v", got)
	}
}

func TestRealNodeConfigFiles(t *testing.T) {
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	if err := writePKI(pki); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Name: "h100-1", Server: "https://127.0.0.1:1"}
	n := &RealNode{Name: "h100-1-n0000", Dir: filepath.Join(dir, "n"), SocketDir: filepath.Join(dir, "s"), Bridge: "sh0c0n0", Subnet: "10.200.0.0/24",
		IP: "10.200.0.1", KubeletPort: 1234, HealthzPort: 1235, CgroupRoot: "/shoal-sh0c0n0"}
	c.RealNodes = []*RealNode{n}
	if err := writeRealNodeConfig(c, n, "/bin", pki, "/usr/sbin/runc", "/usr/lib/cni"); err != nil {
		t.Fatal(err)
	}
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(n.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	k := read("kubelet.yaml")
	for _, want := range []string{`address: "10.200.0.1"`, "port: 1234", `clusterDNS: ["10.200.0.1"]`, "failCgroupV1: false",
		`cgroupRoot: "/shoal-sh0c0n0"`, "nodefs.available: \"1%\""} {
		if !strings.Contains(k, want) {
			t.Errorf("kubelet.yaml lacks %q:\n%s", want, k)
		}
	}
	ct := read("containerd.toml")
	for _, want := range []string{"restrict_oom_score_adj = true", `sandbox = "` + PauseImage + `"`, `BinaryName = "/usr/sbin/runc"`,
		"io.containerd.nri.v1.nri"} {
		if !strings.Contains(ct, want) {
			t.Errorf("containerd.toml lacks %q", want)
		}
	}
	if cni := read("cni/10-shoal.conflist"); !strings.Contains(cni, `"bridge":"sh0c0n0"`) || !strings.Contains(cni, `"ipMasq":false`) {
		t.Errorf("CNI config: %s", cni)
	}
	if kc := read("kubeconfig"); !strings.Contains(kc, "kubelet-client.crt") {
		t.Errorf("kubeconfig: %s", kc)
	}
}

// TestNodeNamespaceSharesTheKubeletRoot: what a real node's containerd and
// kubelet run in sees the node's device-plugin directory at the kubelet's
// fixed path and the kubelet root as an rshared mount before the kubelet
// starts, so that the kubelet does not bind-mount its root onto itself at
// start (a mount that raced its pod-resources socket's rename: "invalid
// cross-device link", the kubelet exited; seen once in CI).
func TestNodeNamespaceSharesTheKubeletRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	dir := t.TempDir()
	n := &RealNode{Name: "n1", Dir: filepath.Join(dir, "n1"), SocketDir: filepath.Join(dir, "s")}
	if err := os.MkdirAll(n.DevicePluginDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/usr/bin/unshare", nodeNamespaceArgs(n, "/bin/cat", "/proc/self/mountinfo")...).CombinedOutput()
	if err != nil {
		t.Fatalf("unshare: %v\n%s", err, out)
	}
	var root, plugins []string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 7 {
			continue
		}
		switch unescapeMount(f[4]) {
		case n.KubeletRoot():
			root = append(root, line)
		case kubeletDevicePluginDir:
			plugins = append(plugins, line)
		}
	}
	if len(root) != 1 || !strings.Contains(root[0], " shared:") {
		t.Errorf("want one shared mount at the kubelet root %s, got %d:\n%s", n.KubeletRoot(), len(root), strings.Join(root, ""))
	}
	if len(plugins) != 1 {
		t.Errorf("want one mount at %s, got %d:\n%s", kubeletDevicePluginDir, len(plugins), strings.Join(plugins, ""))
	}
}
