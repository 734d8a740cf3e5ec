// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// killRealNodeWorkloads kills every container of the fleet's real nodes
// (each process in a kubelet's cgroup tree) and their containerd shims,
// which outlive containerd. It runs before the kubelets and containerds stop.
func (f *Fleet) killRealNodeWorkloads() {
	for _, c := range f.Clusters {
		for _, n := range c.RealNodes {
			for _, pid := range cgroupPids(n.CgroupRoot) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			for _, pid := range pidsWithArg(n.Socket()) {
				if comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm")); strings.HasPrefix(string(comm), "containerd-shim") {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	}
}

// teardownRealNodes removes what real nodes leave on the host once their
// processes are gone: mounts under their directories (container root
// filesystems, network namespaces, volumes), their cgroups and bridges.
// It is safe to call for a fleet that died: it only touches the paths,
// cgroups and bridges recorded for its own nodes.
func (f *Fleet) teardownRealNodes() {
	f.killRealNodeWorkloads()
	for _, c := range f.Clusters {
		for _, n := range c.RealNodes {
			unmountUnder(n.Dir)
			unmountUnder(n.SocketDir)
			for range 20 { // the kernel frees a killed task's cgroup a little later
				if removeCgroups(n.CgroupRoot) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			delBridge(n.Bridge)
		}
	}
}

// cgroupPids lists the processes in root's subtree of the pids hierarchy.
func cgroupPids(root string) []int {
	var out []int
	_ = filepath.WalkDir(filepath.Join("/sys/fs/cgroup/pids", root), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
		return nil
	})
	return out
}

// pidsWithArg lists the processes whose command line has arg.
func pidsWithArg(arg string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if a == arg {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// unmountUnder detaches every mount at or below dir, deepest first.
func unmountUnder(dir string) {
	fh, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer func() { _ = fh.Close() }()
	var mounts []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			mounts = append(mounts, mp)
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	for _, m := range mounts {
		_ = syscall.Unmount(m, syscall.MNT_DETACH)
	}
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeCgroups removes root's subtree in every hierarchy, deepest first,
// and reports whether nothing is left.
func removeCgroups(root string) bool {
	clean := true
	for _, ctl := range cgroupControllers {
		base := filepath.Join("/sys/fs/cgroup", ctl, root)
		var dirs []string
		_ = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !os.IsNotExist(err) {
				clean = false
			}
		}
	}
	return clean
}
