// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"

	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// TestTopologyFlags: no flag detects a preset; --topology-preset names one;
// --topology-map and the rack/block/zone key flags of old make a map; the
// flags that contradict each other, an unknown preset and a bad map are
// refused.
func TestTopologyFlags(t *testing.T) {
	gfd := fedinv.DefaultLabelKeys()
	legacy := gfd
	legacy.Rack = "example.com/rack"
	tests := []struct {
		args    []string
		want    fedinv.TopologyChoice
		wantErr string
	}{
		{args: nil, want: fedinv.TopologyChoice{Preset: fedinv.PresetAuto}},
		{args: []string{"--topology-preset=topograph-v1"}, want: fedinv.TopologyChoice{Preset: fedinv.PresetTopographV1}},
		{args: []string{"--topology-map=rack=a/r, nvlink=a/n"}, want: fedinv.TopologyChoice{Map: &fedinv.LabelKeys{Rack: "a/r", NVLink: "a/n"}}},
		{args: []string{"--rack-label-key=example.com/rack"}, want: fedinv.TopologyChoice{Map: &legacy}},
		{args: []string{"--topology-preset=nope"}, wantErr: `unknown preset "nope"`},
		{args: []string{"--topology-map=rack=a,rack=b"}, wantErr: "given twice"},
		{args: []string{"--topology-map=spine=a"}, wantErr: `unknown level "spine"`},
		{args: []string{"--topology-map=rack"}, wantErr: "not level=key"},
		{args: []string{"--topology-map=rack=a", "--topology-preset=gfd"}, wantErr: "--topology-map excludes"},
		{args: []string{"--topology-map=rack=a", "--zone-label-key=z"}, wantErr: "--topology-map excludes"},
		{args: []string{"--topology-preset=gfd", "--rack-label-key=r"}, wantErr: "--topology-preset excludes"},
	}
	for _, tt := range tests {
		got, err := parse(t, tt.args...).topology.choice()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: err = %v, want one containing %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		if got.Preset != tt.want.Preset || (got.Map == nil) != (tt.want.Map == nil) || (got.Map != nil && *got.Map != *tt.want.Map) {
			t.Errorf("%v: choice = %+v (map %+v), want %+v (map %+v)", tt.args, got, got.Map, tt.want, tt.want.Map)
		}
	}
}
