// SPDX-License-Identifier: Apache-2.0

// Command shoal-deviceplugin is the local fleet's device plugin for real
// nodes: it advertises --devices simulated GPUs as --resource to the kubelet
// whose device-plugin directory is --kubelet-socket-dir, through the real
// kubelet device-plugin API, and sets NVIDIA_VISIBLE_DEVICES on Allocate.
// Node labels (GPU Feature Discovery's) are not its job: the fleet labels
// nodes from the profile. See internal/deviceplugin and docs/programs.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/shoal-dev/shoal/internal/deviceplugin"
)

func main() {
	host, _ := os.Hostname()
	var cfg deviceplugin.Config
	klog.InitFlags(nil)
	flag.StringVar(&cfg.SocketDir, "kubelet-socket-dir", pluginapi.DevicePluginPath,
		"the kubelet's device-plugin directory (<kubelet --root-dir>/device-plugins): kubelet.sock is there and the plugin's socket goes there")
	flag.StringVar(&cfg.Resource, "resource", deviceplugin.DefaultResource, "extended resource the devices are advertised as")
	devices := flag.Int("devices", 8, "number of devices to advertise")
	prefix := flag.String("device-prefix", "GPU-"+host, "device IDs are <prefix>-0 … <prefix>-(N-1); give each node its own so IDs are unique fleet-wide")
	flag.StringVar(&cfg.HealthFile, "health-file", "", "file listing device IDs (one a line) to advertise as Unhealthy; read every --health-interval; missing means all healthy")
	flag.DurationVar(&cfg.HealthInterval, "health-interval", deviceplugin.DefaultHealthInterval, "how often --health-file is read")
	flag.StringVar(&cfg.SocketName, "socket-name", "", "the plugin's socket file name in --kubelet-socket-dir (default shoal-<resource with / as ->.sock)")
	flag.Parse()
	if *devices < 0 {
		fmt.Fprintln(os.Stderr, "shoal-deviceplugin: --devices must not be negative")
		os.Exit(2)
	}
	cfg.IDs = deviceplugin.DeviceIDs(*prefix, *devices)
	p, err := deviceplugin.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shoal-deviceplugin:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := p.Run(ctx); err != nil {
		klog.ErrorS(err, "Device plugin failed")
		stop()
		os.Exit(1)
	}
}
