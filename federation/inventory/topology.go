// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// How an agent came to its topology map (Topology.Source).
const (
	// TopologySourceAuto: detected from the GPU nodes' labels.
	TopologySourceAuto = "auto"
	// TopologySourcePreset: a preset named by the operator.
	TopologySourcePreset = "preset"
	// TopologySourceMap: keys given by the operator.
	TopologySourceMap = "map"
)

// TopologyChoice is how an agent picks its cluster's topology map: a named
// preset, an explicit map, or (the zero value) auto-detection.
type TopologyChoice struct {
	// Preset names a built-in preset; "" or PresetAuto detects one.
	Preset string
	// Map, when set, is the topology map itself; it excludes Preset.
	Map *LabelKeys
}

// Validate reports an unknown preset, an empty map, or both a preset and a map.
func (c TopologyChoice) Validate() error {
	if c.Map != nil {
		if c.Preset != "" && c.Preset != PresetAuto {
			return fmt.Errorf("topology: a preset (%q) and a map exclude each other", c.Preset)
		}
		if c.Map.IsZero() {
			return fmt.Errorf("topology: the map names no label key")
		}
		return nil
	}
	if c.Preset == "" || c.Preset == PresetAuto {
		return nil
	}
	if _, ok := LookupPreset(c.Preset); !ok {
		return fmt.Errorf("topology: unknown preset %q (known: %s, %s)", c.Preset, PresetAuto, strings.Join(DetectionOrder(), ", "))
	}
	return nil
}

// Topology is the topology map an agent used for one inventory, as it
// reports it to the hub.
type Topology struct {
	// Source is TopologySourceAuto, TopologySourcePreset or TopologySourceMap.
	Source string `json:"source"`
	// Preset is the preset used ("" for a map, or when detection found none).
	Preset string `json:"preset,omitempty"`
	// Keys are the label keys read.
	Keys LabelKeys `json:"keys"`
	// Message says, when the cluster has GPU nodes but none carries any of
	// the keys, that its topology is unknown and what placement makes of it.
	Message string `json:"message,omitempty"`
}

// Resolve returns the topology map for the nodes (only GPU nodes count, as
// Build keeps only them). Auto-detection picks the first preset in
// DetectionOrder whose Detect keys at least one GPU node carries; when none
// matches it reads no key at all rather than guess, and says so in Message.
// A named preset or a map is used as given; Message says so when no GPU node
// carries any of its keys.
func (c TopologyChoice) Resolve(nodes []*corev1.Node) Topology {
	return c.ResolveWith(nodes, IsGPUNode)
}

// ResolveWith is Resolve where isGPU tells the GPU nodes (a DRA-only node
// has no GPU resource; its GPUs are in ResourceSlices).
func (c TopologyChoice) ResolveWith(nodes []*corev1.Node, isGPU func(*corev1.Node) bool) Topology {
	gpu := make([]*corev1.Node, 0, len(nodes))
	for _, n := range nodes {
		if n != nil && isGPU(n) {
			gpu = append(gpu, n)
		}
	}
	var t Topology
	switch {
	case c.Map != nil:
		t = Topology{Source: TopologySourceMap, Keys: *c.Map}
	case c.Preset != "" && c.Preset != PresetAuto:
		p, _ := LookupPreset(c.Preset)
		t = Topology{Source: TopologySourcePreset, Preset: p.Name, Keys: p.Keys}
	default:
		t = Topology{Source: TopologySourceAuto}
		for _, p := range presets {
			if anyCarries(gpu, p.Detect) {
				t.Preset, t.Keys = p.Name, p.Keys
				break
			}
		}
		if t.Preset == "" && len(gpu) > 0 {
			t.Message = fmt.Sprintf("no topology labels found on GPU nodes (no GPU node carries the keys of preset %s): "+
				"placement treats every node as its own NVLink domain, rack and block; set --topology-preset or --topology-map",
				strings.Join(DetectionOrder(), ", "))
		}
		return t
	}
	if len(gpu) > 0 && !anyCarries(gpu, t.Keys.list()) {
		t.Message = fmt.Sprintf("no GPU node carries any of the keys %s: placement treats every node as its own NVLink domain, rack and block",
			strings.Join(t.Keys.list(), ", "))
	}
	return t
}

func anyCarries(nodes []*corev1.Node, keys []string) bool {
	for _, n := range nodes {
		for _, k := range keys {
			if _, ok := n.Labels[k]; ok {
				return true
			}
		}
	}
	return false
}

// ParseTopologyMap parses level=key pairs, comma-separated, e.g.
// "nvlink=nvidia.com/gpu.clique,rack=example.com/rack"; the levels are
// nvlink, rack, block and zone, each at most once.
func ParseTopologyMap(s string) (LabelKeys, error) {
	var k LabelKeys
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		level, key, ok := strings.Cut(part, "=")
		level, key = strings.TrimSpace(level), strings.TrimSpace(key)
		if !ok || key == "" {
			return LabelKeys{}, fmt.Errorf("topology map: %q is not level=key", part)
		}
		if err := k.Set(level, key); err != nil {
			return LabelKeys{}, err
		}
	}
	if k.IsZero() {
		return LabelKeys{}, fmt.Errorf("topology map: %q names no level", s)
	}
	return k, nil
}

// Set sets the key of one level (nvlink, rack, block or zone); it refuses an
// unknown level and a level already set.
func (k *LabelKeys) Set(level, key string) error {
	var f *string
	switch level {
	case "nvlink":
		f = &k.NVLink
	case "rack":
		f = &k.Rack
	case "block":
		f = &k.Block
	case "zone":
		f = &k.Zone
	default:
		return fmt.Errorf("topology map: unknown level %q (nvlink, rack, block, zone)", level)
	}
	if *f != "" {
		return fmt.Errorf("topology map: level %q given twice (%q, %q)", level, *f, key)
	}
	*f = key
	return nil
}
