// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// topologyOptions are the flags that pick the node labels read as NVLink
// domain, rack, block and zone.
type topologyOptions struct {
	preset, mapping            string
	rackKey, blockKey, zoneKey string
}

func (o *topologyOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.preset, "topology-preset", fedinv.PresetAuto,
		"built-in topology map: "+fedinv.PresetAuto+" (pick the first preset whose keys a GPU node carries, in the order "+
			strings.Join(fedinv.DetectionOrder(), ", ")+") or one of them by name; excludes --topology-map")
	fs.StringVar(&o.mapping, "topology-map", "",
		"topology map, level=label-key pairs comma-separated, levels nvlink, rack, block, zone "+
			"(e.g. nvlink=nvidia.com/gpu.clique,rack=example.com/rack); levels left out are not read; excludes --topology-preset")
	fs.StringVar(&o.rackKey, "rack-label-key", "", "node label naming a node's rack; with --block-label-key and --zone-label-key "+
		"it makes a topology map on the gfd preset's other keys (as --topology-map)")
	fs.StringVar(&o.blockKey, "block-label-key", "", "node label naming a node's block (see --rack-label-key)")
	fs.StringVar(&o.zoneKey, "zone-label-key", "", "node label naming a node's zone (see --rack-label-key)")
}

// choice returns the topology choice the flags make. The rack/block/zone
// key flags of old make a map: the gfd preset's keys with theirs in place.
func (o *topologyOptions) choice() (fedinv.TopologyChoice, error) {
	legacy := o.rackKey != "" || o.blockKey != "" || o.zoneKey != ""
	explicitPreset := o.preset != "" && o.preset != fedinv.PresetAuto
	var c fedinv.TopologyChoice
	switch {
	case o.mapping != "" && (explicitPreset || legacy):
		return c, fmt.Errorf("--topology-map excludes --topology-preset and --rack-label-key/--block-label-key/--zone-label-key")
	case legacy && explicitPreset:
		return c, fmt.Errorf("--topology-preset excludes --rack-label-key/--block-label-key/--zone-label-key")
	case o.mapping != "":
		keys, err := fedinv.ParseTopologyMap(o.mapping)
		if err != nil {
			return c, fmt.Errorf("--topology-map: %w", err)
		}
		c.Map = &keys
	case legacy:
		keys := fedinv.DefaultLabelKeys()
		for _, kv := range []struct {
			flag string
			dst  *string
		}{{o.rackKey, &keys.Rack}, {o.blockKey, &keys.Block}, {o.zoneKey, &keys.Zone}} {
			if kv.flag != "" {
				*kv.dst = kv.flag
			}
		}
		c.Map = &keys
	default:
		c.Preset = o.preset
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("--topology-preset: %w", err)
	}
	return c, nil
}
