// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shoal-dev/shoal/internal/images"
)

// RealNodeOptions turn the first nodes of every workload cluster into real
// nodes: a kubelet on its own containerd and runc, with bridge CNI, the
// project's device plugin advertising the profile's GPUs, and the cluster's
// CoreDNS (docs/real-nodes.md).
type RealNodeOptions struct {
	// PerCluster is the number of real nodes in each workload cluster; they
	// replace that many of its KWOK nodes (at most 8).
	PerCluster int
	// PauseBinary (shoal-pause) becomes the sandbox image PauseImage;
	// DevicePluginBinary is shoal-deviceplugin.
	PauseBinary, DevicePluginBinary string
	// Images are built from static binaries and imported into every real
	// node too (e.g. the rendezvous program).
	Images []images.Spec
	// Archives are image archives (OCI or Docker) imported into every real
	// node as they are, e.g. _output/images/shoal-agent.oci.tar.
	Archives []string
	// Runc is the OCI runtime (default /usr/sbin/runc, Debian's runc);
	// CNIBinDir holds the CNI plugins (default /usr/lib/cni, Debian's
	// containernetworking-plugins).
	Runc, CNIBinDir string
}

// RealNodeBinaries are the cache binaries real nodes need besides RequiredBinaries.
var RealNodeBinaries = []string{"kubelet", "containerd", "containerd-shim-runc-v2", "ctr", "coredns"}

// ErrMissingHostPackages is returned (wrapped) when runc or the CNI plugins are missing.
var ErrMissingHostPackages = errors.New("missing host packages for real nodes")

func (o *RealNodeOptions) check(binDir string) error {
	if o == nil || o.PerCluster == 0 {
		return nil
	}
	if o.PerCluster < 0 || o.PerCluster > 8 {
		return fmt.Errorf("real nodes per cluster: %d, want 1..8", o.PerCluster)
	}
	if os.Geteuid() != 0 {
		return errors.New("real nodes need root (kubelet, containerd, bridges and cgroups)")
	}
	if o.Runc == "" {
		o.Runc = "/usr/sbin/runc"
	}
	if o.CNIBinDir == "" {
		o.CNIBinDir = "/usr/lib/cni"
	}
	var missing []string
	for _, b := range RealNodeBinaries {
		if st, err := os.Stat(filepath.Join(binDir, b)); err != nil || st.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w %v in %s: run `make k8s-bin`", ErrMissingBinaries, missing, binDir)
	}
	var host []string
	for _, f := range []string{o.Runc, filepath.Join(o.CNIBinDir, "bridge"), filepath.Join(o.CNIBinDir, "host-local"),
		filepath.Join(o.CNIBinDir, "loopback")} {
		if _, err := os.Stat(f); err != nil {
			host = append(host, f)
		}
	}
	if len(host) > 0 {
		return fmt.Errorf("%w %v: run `hack/host-deps.sh` (installs Debian's runc and containernetworking-plugins)",
			ErrMissingHostPackages, host)
	}
	for _, b := range []string{o.PauseBinary, o.DevicePluginBinary} {
		if st, err := os.Stat(b); b == "" || err != nil || st.Mode()&0o111 == 0 {
			return fmt.Errorf("%w %q: run `make build`", ErrMissingShoalBinaries, b)
		}
	}
	return nil
}

// real reports whether the fleet runs real nodes.
func (o *Options) real() bool { return o.RealNodes != nil && o.RealNodes.PerCluster > 0 }

// RendezvousImage is the image of the rendezvous program (cmd/shoal-rendezvous)
// on every real node.
const RendezvousImage = "shoal.local/rendezvous:dev"

// TrainerImage is the image of the stand-in training job (cmd/shoal-trainer)
// on every real node, when its binary is given (docs/checkpoints.md).
const TrainerImage = "shoal.local/trainer:dev"

// NewRealNodeOptions runs perCluster real nodes per workload cluster with
// the given shoal-pause, shoal-deviceplugin and shoal-rendezvous binaries
// (static builds: `make build`), the last one as RendezvousImage.
func NewRealNodeOptions(perCluster int, pause, devicePlugin, rendezvous string) *RealNodeOptions {
	return &RealNodeOptions{PerCluster: perCluster, PauseBinary: pause, DevicePluginBinary: devicePlugin,
		Images: []images.Spec{{Ref: RendezvousImage, Binary: rendezvous}}}
}
