// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseWaves(t *testing.T) {
	tests := []struct {
		spec    string
		want    []Step
		wantErr bool
	}{
		{spec: "", want: []Step{{Percent: 100}}},
		{spec: "1,25%,100%", want: []Step{{Count: 1}, {Percent: 25}, {Percent: 100}}},
		{spec: " 2 , 50% ", want: []Step{{Count: 2}, {Percent: 50}}},
		{spec: "0", wantErr: true},
		{spec: "-1", wantErr: true},
		{spec: "101%", wantErr: true},
		{spec: "a", wantErr: true},
		{spec: "1,,2", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseWaves(tt.spec)
		var ie *InvalidWavesError
		if tt.wantErr != errors.As(err, &ie) {
			t.Errorf("ParseWaves(%q) error = %v, want error %v", tt.spec, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseWaves(%q) = %v, want %v", tt.spec, got, tt.want)
		}
	}
}

func TestPlan(t *testing.T) {
	eight := []string{"h", "g", "f", "e", "d", "c", "b", "a"}
	tests := []struct {
		name     string
		clusters []string
		spec     string
		want     [][]string
	}{
		{"canary then quarter then rest", eight, "1,25%,100%", [][]string{{"a"}, {"b"}, {"c", "d", "e", "f", "g", "h"}}},
		{"percent rounds up", []string{"a", "b", "c"}, "50%,100%", [][]string{{"a", "b"}, {"c"}}},
		{"steps that add nobody are dropped", []string{"a", "b"}, "1,10%,100%", [][]string{{"a"}, {"b"}}},
		{"leftover clusters form a last wave", []string{"a", "b", "c"}, "1", [][]string{{"a"}, {"b", "c"}}},
		{"count beyond the fleet is capped", []string{"b", "a"}, "5", [][]string{{"a", "b"}}},
		{"duplicates and empties dropped", []string{"b", "a", "b", ""}, "100%", [][]string{{"a", "b"}}},
		{"no clusters, no waves", nil, "1,100%", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps, err := ParseWaves(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := Plan(tt.clusters, steps); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Plan = %v, want %v", got, tt.want)
			}
		})
	}
}
