// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// netLock serialises the choice of network slots between fleets starting at once.
const netLock = "/run/shoal-dev-net.lock"

// planRealNodes gives every workload cluster its real nodes: a free network
// slot for the whole fleet (no bridge of it exists), then per node a
// bridge, subnet, ports and cgroup root. It creates the bridges while it
// holds the host-wide lock, so a fleet starting at the same time picks
// another slot.
func (f *Fleet) planRealNodes() error {
	if !f.opts.real() {
		return nil
	}
	lock, err := os.OpenFile(netLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Close() }()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	slot := -1
	for s := range 50 {
		if !slotInUse(s) {
			slot = s
			break
		}
	}
	if slot < 0 {
		return fmt.Errorf("real nodes: all 50 network slots are in use (bridges sh<slot>c*); stop other fleets")
	}
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("real nodes: enable IP forwarding between the pod bridges: %w", err)
	}
	wi := 0
	for _, c := range f.Clusters {
		if c.Role != RoleWorkload {
			continue
		}
		n := min(f.opts.RealNodes.PerCluster, c.Nodes)
		for j := range n {
			name := fmt.Sprintf("%s-n%04d", c.Name, j)
			br, subnet, ip, err := realNodeNet(slot, wi, j)
			if err != nil {
				return err
			}
			rn := &RealNode{Name: name, Dir: filepath.Join(c.Dir, "nodes", name), SocketDir: filepath.Join(f.Dir, "run", br),
				Bridge: br, Subnet: subnet, IP: ip,
				CgroupRoot: fmt.Sprintf("/shoal-%s", br)}
			if err := addBridge(br, ip); err != nil {
				return err
			}
			if rn.KubeletPort, err = freePort(ip); err != nil {
				return err
			}
			if rn.HealthzPort, err = freePort("127.0.0.1"); err != nil {
				return err
			}
			c.RealNodes = append(c.RealNodes, rn)
		}
		wi++
	}
	return nil
}

// slotInUse reports whether a bridge of slot s exists.
func slotInUse(s int) bool {
	ifs, _ := net.Interfaces()
	prefix := fmt.Sprintf("sh%dc", s)
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, prefix) {
			return true
		}
	}
	return false
}

// addBridge creates the bridge with ip/24 and brings it up.
func addBridge(name, ip string) error {
	for _, args := range [][]string{
		{"link", "add", name, "type", "bridge"},
		{"addr", "add", ip + "/24", "dev", name},
		{"link", "set", name, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("real nodes: ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// delBridge removes the bridge (a missing one is fine).
func delBridge(name string) {
	_ = exec.Command("ip", "link", "del", name).Run()
}
