// SPDX-License-Identifier: Apache-2.0

package scheduler

import "testing"

func TestMeaningOfMasksCountsNotNames(t *testing.T) {
	same := [][2]string{
		{"needs 32×8 GPUs; 120 are free on matching nodes", "needs 32×8 GPUs; 118 are free on matching nodes"},
		{"needs 17×8 GPUs in one cluster; the largest free cluster has 16×8 (h100-1)",
			"needs 17×8 GPUs in one cluster; the largest free cluster has 3×8 (h100-1)"},
		{"queue research would hold 24 h100 GPUs, quota nominal 16 + borrowing 0",
			"queue research would hold 40 h100 GPUs, quota nominal 16 + borrowing 0"},
		{"needs 4×8 GPUs; no schedulable node matches its products, clusters, MIG profile and tolerations (3 match, 3 cordoned or not ready)",
			"needs 4×8 GPUs; no schedulable node matches its products, clusters, MIG profile and tolerations (9 match, 9 cordoned or not ready)"},
	}
	for _, p := range same {
		if a, b := meaningOf(p[0]), meaningOf(p[1]); a != b {
			t.Errorf("%q and %q differ in meaning: %q != %q", p[0], p[1], a, b)
		}
	}
	differ := [][2]string{
		{"needs 32×8 GPUs in one rack; the largest free rack has 12×8 (eu1/rack:r7)",
			"needs 32×8 GPUs in one rack; the largest free rack has 12×8 (eu1/rack:r9)"},
		{"the largest free cluster has 16×8 (h100-1)", "the largest free cluster has 16×8 (h100-2)"},
		{"queue team2 would hold 8 h100 GPUs", "queue team3 would hold 8 h100 GPUs"},
		{"would hold 8 h100 GPUs", "would hold 8 a100-80gb GPUs"},
		{"needs 4×8 GPUs; 3 are free on matching nodes",
			"needs 4×8 GPUs; 3 are free on matching nodes but only 1 members of 8 GPUs fit on single nodes"},
	}
	for _, p := range differ {
		if meaningOf(p[0]) == meaningOf(p[1]) {
			t.Errorf("%q and %q mean the same (%q)", p[0], p[1], meaningOf(p[0]))
		}
	}
	if got, want := meaningOf("needs 32×8 GPUs; 120 are free"), "needs #×# GPUs; # are free"; got != want {
		t.Errorf("meaningOf = %q, want %q", got, want)
	}
}
