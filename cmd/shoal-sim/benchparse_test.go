// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
)

func TestParseBenchMedians(t *testing.T) {
	raw := `goos: linux
BenchmarkPlace/F-M/gpus=8         	     200	      600 ns/op	       320.0 p50-ns	      4868 p99-ns	     515 B/op	       7 allocs/op
BenchmarkPlace/F-M/gpus=8         	     200	      700 ns/op	       330.0 p50-ns	      5000 p99-ns	     515 B/op	       7 allocs/op
BenchmarkPlace/F-M/gpus=8         	     200	      900 ns/op	       310.0 p50-ns	      4000 p99-ns	     515 B/op	       7 allocs/op
BenchmarkThroughput/F-L           	     300	     11052 ns/op	     90479 gangs/s	   225595 members/s
PASS`
	figs, err := parseBench(strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 2 {
		t.Fatalf("figures = %+v", figs)
	}
	m := figs[0].Median
	if figs[0].Repeats != 3 || m["ns/op"] != 700 || m["p50-ns"] != 320 || m["p99-ns"] != 4868 || m["allocs/op"] != 7 {
		t.Errorf("medians = %+v", figs[0])
	}
	if figs[1].Median["members/s"] != 225595 {
		t.Errorf("throughput = %+v", figs[1])
	}
}
