// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSortPendingKeys checks that sortPending's compact keys order gangs
// exactly as a stable sort by priority, Time.Compare and ID does: equal
// and zero times, times before 1970 and in other zones, duplicate IDs,
// negative priorities, monotonic clock readings, both orders.
func TestSortPendingKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	zones := []*time.Location{time.UTC, time.FixedZone("x", 5*3600), time.FixedZone("y", -7*3600)}
	for n := range 300 {
		gs := make([]Gang, rng.IntN(60))
		base := time.Date(1900+rng.IntN(300), 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range gs {
			g := &gs[i]
			g.ID = fmt.Sprintf("g%d", rng.IntN(len(gs)+1))
			g.Priority = []int32{-5, 0, 100, 1000, 10000, 1 << 30, -1 << 31}[rng.IntN(7)]
			switch rng.IntN(5) {
			case 0: // zero
			case 1:
				g.Submitted = base.Add(time.Duration(rng.IntN(3)) * time.Second).In(zones[rng.IntN(3)])
			case 2:
				g.Submitted = base.Add(time.Duration(rng.IntN(3)) * time.Nanosecond).In(zones[rng.IntN(3)])
			default:
				g.Submitted = base.Add(time.Duration(rng.Int64N(int64(1000 * time.Hour)))).In(zones[rng.IntN(3)])
			}
			if n%10 == 0 && rng.IntN(3) == 0 {
				g.Submitted = time.Now() // a monotonic reading
			}
		}
		for _, o := range []Order{OrderFairShare, OrderFIFO} {
			want := make([]*Gang, len(gs))
			for i := range gs {
				want[i] = &gs[i]
			}
			slices.SortStableFunc(want, func(a, b *Gang) int { return comparePending(a, b, o) })
			if got := sortPending(pendingRefs(&Input{Pending: gs}, new([]*Gang)), o, new([]*Gang)); !slices.Equal(got, want) {
				t.Fatalf("case %d order %d: keys order differs from the stable sort", n, o)
			}
			// Given in that order already (the hub's index keeps it), the
			// gangs come back as they are (the check, not the sort).
			ordered := make([]Gang, len(want))
			for i, g := range want {
				ordered[i] = *g
			}
			for i, g := range sortPending(pendingRefs(&Input{Pending: ordered}, new([]*Gang)), o, new([]*Gang)) {
				if g != &ordered[i] {
					t.Fatalf("case %d order %d: an ordered input reordered at %d", n, o, i)
				}
			}
		}
	}
}

// TestIDPrefixOrder checks that where idPrefix's words differ they order
// two strings as strings.Compare does.
func TestIDPrefixOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte{0, 1, 'a', 'b', 0xff}
	str := func() string {
		b := make([]byte, rng.IntN(20))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 200000 {
		a, b := str(), str()
		a0, a1 := idPrefix(a)
		b0, b1 := idPrefix(b)
		var got int
		switch {
		case a0 != b0:
			got = cmpUint(a0, b0)
		case a1 != b1:
			got = cmpUint(a1, b1)
		default:
			continue
		}
		if want := strings.Compare(a, b); got != want {
			t.Fatalf("%q vs %q: prefixes say %d, strings.Compare %d", a, b, got, want)
		}
	}
}

func cmpUint(a, b uint64) int {
	if a < b {
		return -1
	}
	return 1
}
