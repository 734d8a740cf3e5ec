// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

// flat is the set as a fresh snapshot holds it: no base, every gang its
// own (to compare a Builder's snapshot with NewSnapshot's).
func (m *allocSet) flat() allocSet {
	out := newAllocSet(m.n)
	for id, al := range m.all() {
		out.own[id] = al
	}
	out.n = len(out.own)
	return out
}

// TestAllocSetIsAMap: any sequence of sets and removals over a base
// leaves the set holding what a copy of the base changed alike holds, and
// the base unchanged.
func TestAllocSetIsAMap(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		base := map[string]*allocation{}
		for i := range rng.IntN(20) {
			base[fmt.Sprint("g", i)] = &allocation{}
		}
		want := maps.Clone(base)
		baseCopy := maps.Clone(base)
		m := over(base)
		if rng.IntN(4) == 0 {
			m = newAllocSet(0)
			want, base, baseCopy = map[string]*allocation{}, nil, nil
		}
		for range 60 {
			id := fmt.Sprint("g", rng.IntN(30))
			if rng.IntN(2) == 0 {
				al := &allocation{}
				m.set(id, al)
				want[id] = al
			} else {
				m.remove(id)
				delete(want, id)
			}
			for id := range 30 {
				k := fmt.Sprint("g", id)
				got, ok := m.get(k)
				w, wok := want[k]
				if ok != wok || got != w {
					t.Fatalf("seed %d: get(%s) = %p, %v; want %p, %v", seed, k, got, ok, w, wok)
				}
			}
			all := map[string]*allocation{}
			for id, al := range m.all() {
				if _, twice := all[id]; twice {
					t.Fatalf("seed %d: %s yielded twice", seed, id)
				}
				all[id] = al
			}
			if !maps.Equal(all, want) || m.len() != len(want) {
				t.Fatalf("seed %d: all %v (len %d), want %v", seed, all, m.len(), want)
			}
		}
		if !maps.Equal(base, baseCopy) {
			t.Fatalf("seed %d: the base changed", seed)
		}
	}
}
