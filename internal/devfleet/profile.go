// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Profile describes the GPU nodes of one kind of workload cluster.
type Profile struct {
	// Name is what --profile takes, e.g. hgx-h100.
	Name string
	// Short prefixes the names of clusters built from the profile, e.g. h100.
	Short string
	// Description is one line for help texts.
	Description string
	// DefaultNodes is the node count when none is asked for.
	DefaultNodes int
	// RackSize is the number of nodes per rack, RacksPerBlock racks per block.
	RackSize, RacksPerBlock int
	// CliquePerRack gives every rack its own nvidia.com/gpu.clique (NVL72).
	CliquePerRack bool
	// Topology is the labelling of the nodes' topology: TopologyGFD (""),
	// topology.kubernetes.io/{zone,block,rack} and nvidia.com/gpu.clique, or
	// TopologyTopographV1, only Topograph v1's fabric.topograph.run/tier-N
	// and accelerator.topograph.run/domain.
	Topology string
	// Arch is the node's kubernetes.io/arch.
	Arch string
	// Labels are the GFD labels every node of the profile carries.
	Labels map[string]string
	// Resources are the node's capacity (and allocatable), as quantities.
	Resources map[string]string
	// DRA, when set, makes the nodes' GPUs devices of NVIDIA's DRA driver,
	// published as ResourceSlices by the fleet's driver simulator (dra.go),
	// instead of the extended resource nvidia.com/gpu.
	DRA *DRADevices
	// ComputeDomains, when set, makes the clusters serve NVIDIA's
	// ComputeDomains through the fleet's driver simulator (computedomain.go):
	// the CRD, the channel DeviceClass and slices, and a controller that
	// turns a domain Ready once its channel claims are allocated.
	ComputeDomains bool
}

// GPUsPerNode is the number of whole GPUs (nvidia.com/gpu, or DRA devices) one node exposes.
func (p *Profile) GPUsPerNode() int {
	if p.DRA != nil {
		return p.DRA.PerNode
	}
	n, _ := strconv.Atoi(p.Resources[ResourceGPU])
	return n
}

var profiles = map[string]*Profile{
	"hgx-h100": {
		Name: "hgx-h100", Short: "h100",
		Description:  "HGX H100 nodes, 8 x nvidia.com/gpu each, racks of 8 nodes, 4 racks per block",
		DefaultNodes: 16, RackSize: 8, RacksPerBlock: 4, Arch: "amd64",
		Labels: gfdLabels("NVIDIA-H100-80GB-HBM3", "hopper", "81559", "8", "9", "0", "DGX-H100", false),
		Resources: map[string]string{
			"cpu": "224", "memory": "2Ti", "pods": "110", "ephemeral-storage": "30Ti", ResourceGPU: "8",
		},
	},
	"gb200-nvl72": {
		Name: "gb200-nvl72", Short: "gb200",
		Description:  "GB200 NVL72 racks: 18 nodes x 4 GPUs, each rack one nvidia.com/gpu.clique, 8 racks per block",
		DefaultNodes: 36, RackSize: 18, RacksPerBlock: 8, CliquePerRack: true, Arch: "arm64",
		Labels: gfdLabels("NVIDIA-GB200", "blackwell", "189471", "4", "10", "0", "GB200-NVL72", false),
		Resources: map[string]string{
			"cpu": "144", "memory": "960Gi", "pods": "110", "ephemeral-storage": "15Ti", ResourceGPU: "4",
		},
	},
	"gb200-nvl72-cd": {
		Name: "gb200-nvl72-cd", Short: "gb200cd",
		Description: "GB200 racks serving NVIDIA ComputeDomains (the fleet's driver simulator): nodes of 4 x nvidia.com/gpu, " +
			"racks of 4 nodes (cut down from NVL72's 18 for small fleets), each rack one nvidia.com/gpu.clique",
		DefaultNodes: 12, RackSize: 4, RacksPerBlock: 8, CliquePerRack: true, Arch: "arm64", ComputeDomains: true,
		Labels: gfdLabels("NVIDIA-GB200", "blackwell", "189471", "4", "10", "0", "GB200-NVL72", false),
		Resources: map[string]string{
			"cpu": "144", "memory": "960Gi", "pods": "110", "ephemeral-storage": "15Ti", ResourceGPU: "4",
		},
	},
	"hgx-h100-topograph": {
		Name: "hgx-h100-topograph", Short: "h100tg",
		Description: "HGX H100 nodes as hgx-h100, topology labelled only with Topograph v1 keys " +
			"(fabric.topograph.run/tier-0 leaf, tier-1 spine, tier-2 core)",
		DefaultNodes: 16, RackSize: 8, RacksPerBlock: 4, Arch: "amd64", Topology: TopologyTopographV1,
		Labels: gfdLabels("NVIDIA-H100-80GB-HBM3", "hopper", "81559", "8", "9", "0", "DGX-H100", false),
		Resources: map[string]string{
			"cpu": "224", "memory": "2Ti", "pods": "110", "ephemeral-storage": "30Ti", ResourceGPU: "8",
		},
	},
	"hgx-h100-dra": {
		Name: "hgx-h100-dra", Short: "h100dra",
		Description: "HGX H100 nodes as hgx-h100 without any extended GPU resource or GFD label: " +
			"8 GPUs per node published as ResourceSlices of NVIDIA's DRA driver (gpu.nvidia.com) by the fleet's driver simulator",
		DefaultNodes: 16, RackSize: 8, RacksPerBlock: 4, Arch: "amd64",
		Resources: map[string]string{
			"cpu": "224", "memory": "2Ti", "pods": "110", "ephemeral-storage": "30Ti",
		},
		DRA: &DRADevices{PerNode: 8, ProductName: "NVIDIA H100 80GB HBM3", Architecture: "Hopper",
			ComputeCapability: "9.0.0", DriverVersion: "570.172.8", CUDADriverVersion: "12.8.0", Memory: "81559Mi"},
	},
	"a100-mig": {
		Name: "a100-mig", Short: "a100",
		Description: "A100 80GB nodes with MIG (mixed strategy): 2 full GPUs, 4 GPUs as 7 x 1g.10gb, " +
			"2 GPUs as 2 x 3g.40gb; racks of 8 nodes",
		DefaultNodes: 16, RackSize: 8, RacksPerBlock: 4, Arch: "amd64",
		Labels: merge(gfdLabels("NVIDIA-A100-SXM4-80GB", "ampere", "81920", "2", "8", "0", "DGX-A100", true),
			migLabels("1g.10gb", "28", "9728", "14", "1", "1", "0"),
			migLabels("3g.40gb", "4", "40192", "42", "3", "3", "2")),
		Resources: map[string]string{
			"cpu": "256", "memory": "2Ti", "pods": "110", "ephemeral-storage": "15Ti",
			ResourceGPU: "2", ResourceMIG1g10gb: "28", ResourceMIG3g40gb: "4",
		},
	},
	"a100-mig-dra": {
		Name: "a100-mig-dra", Short: "a100dra",
		Description: "A100 80GB nodes as a100-mig without any extended GPU resource or GFD label: NVIDIA's DRA driver " +
			"(gpu.nvidia.com, the fleet's driver simulator) publishes 2 whole GPUs and the static MIG partitions of 6 " +
			"(4 GPUs as 7 x 1g.10gb, 2 as 2 x 3g.40gb), with DeviceClasses mapping nvidia.com/gpu and nvidia.com/mig-* " +
			"to them; racks of 8 nodes (not in the default fleet)",
		DefaultNodes: 16, RackSize: 8, RacksPerBlock: 4, Arch: "amd64",
		Resources: map[string]string{
			"cpu": "256", "memory": "2Ti", "pods": "110", "ephemeral-storage": "15Ti",
		},
		DRA: &DRADevices{PerNode: 2, ProductName: "NVIDIA A100-SXM4-80GB", Architecture: "Ampere",
			ComputeCapability: "8.0.0", DriverVersion: "570.172.8", CUDADriverVersion: "12.8.0", Memory: "81920Mi",
			MIG: []DRAMIGLayout{
				{Profile: "1g.10gb", GPUs: 4, PerGPU: 7, MemorySlices: 1, Memory: "9728Mi", Multiprocessors: 14, CopyEngines: 1},
				{Profile: "3g.40gb", GPUs: 2, PerGPU: 2, MemorySlices: 4, Memory: "40192Mi", Multiprocessors: 42, CopyEngines: 3, Decoders: 2},
			}},
	},
	"l4-shared": {
		Name: "l4-shared", Short: "l4s",
		Description: "L4 nodes whose 4 GPUs are time-sliced 4 ways by the device plugin (renameByDefault): " +
			"16 x nvidia.com/gpu.shared each, no whole GPU; racks of 8 nodes (not in the default fleet)",
		DefaultNodes: 16, RackSize: 8, RacksPerBlock: 4, Arch: "amd64",
		Labels: merge(gfdLabels("NVIDIA-L4", "ada-lovelace", "23034", "4", "8", "9", "PowerEdge-R760xa", false),
			map[string]string{"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"}),
		Resources: map[string]string{
			"cpu": "96", "memory": "512Gi", "pods": "110", "ephemeral-storage": "7Ti", ResourceGPUShared: "16",
		},
	},
}

// The labellings of Profile.Topology.
const (
	TopologyGFD         = ""
	TopologyTopographV1 = "topograph-v1"
)

// DefaultProfiles is the profile of each workload cluster `shoal dev up` starts by default.
var DefaultProfiles = []string{"hgx-h100", "gb200-nvl72", "a100-mig"}

// LookupProfile returns the named profile or an error listing the known ones.
func LookupProfile(name string) (*Profile, error) {
	if p, ok := profiles[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown fleet profile %q (known: %s)", name, strings.Join(ProfileNames(), ", "))
}

// ProfileNames lists the known profiles, sorted.
func ProfileNames() []string {
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func gfdLabels(product, family, memMiB, count, major, minor, machine string, mig bool) map[string]string {
	l := map[string]string{
		LabelGPUProduct: product, LabelGPUFamily: family, LabelGPUMemory: memMiB,
		LabelGPUCount: count, LabelComputeMajor: major, LabelComputeMinor: minor,
		LabelGPUMachine: machine, LabelGPUPresent: "true",
		LabelMIGCapable:                   strconv.FormatBool(mig),
		"nvidia.com/gpu.replicas":         "1",
		"nvidia.com/gpu.mode":             "compute",
		"nvidia.com/gpu.sharing-strategy": "none",
		"nvidia.com/mps.capable":          "false",
		"nvidia.com/cuda.driver.major":    "570",
		"nvidia.com/cuda.driver.minor":    "172",
		"nvidia.com/cuda.driver.rev":      "08",
		"nvidia.com/cuda.runtime.major":   "12",
		"nvidia.com/cuda.runtime.minor":   "8",
	}
	if mig {
		l[LabelMIGStrategy] = "mixed"
	}
	return l
}

func migLabels(profile, count, memMiB, sms, gi, ci, decoders string) map[string]string {
	return map[string]string{
		MIGLabel(profile, "count"): count, MIGLabel(profile, "memory"): memMiB,
		MIGLabel(profile, "multiprocessors"): sms, MIGLabel(profile, "slices.gi"): gi,
		MIGLabel(profile, "slices.ci"): ci, MIGLabel(profile, "engines.copy"): gi,
		MIGLabel(profile, "engines.decoder"): decoders, MIGLabel(profile, "engines.encoder"): "0",
		MIGLabel(profile, "engines.jpeg"): "0", MIGLabel(profile, "engines.ofa"): "0",
	}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
