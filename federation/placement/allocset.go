// SPDX-License-Identifier: Apache-2.0

package placement

import "iter"

// allocSet is a snapshot's allocations by gang ID. A snapshot a Builder
// builds shares the kept running gangs' map as its base (read, never
// written through the set) and holds its cycle's changes in own, over the
// base: a build handed the cycle a copy of the base before, which at
// 65,000 running gangs cost more than the rest of the build (docs/scale.md,
// session 20). A fresh snapshot has no base. The zero allocSet is empty
// and ready.
type allocSet struct {
	// base is shared (nil: none); own holds the gangs added or replaced
	// over it, and a nil value for a gang of base removed.
	base map[string]*allocation
	own  map[string]*allocation
	n    int // the gangs the set holds
}

// newAllocSet is an empty set with room for n gangs of its own.
func newAllocSet(n int) allocSet {
	return allocSet{own: make(map[string]*allocation, n)}
}

// over is a set holding base's gangs, sharing base (which must not change
// while the set is read).
func over(base map[string]*allocation) allocSet {
	return allocSet{base: base, n: len(base)}
}

// get returns gang id's allocation (nil, false when the set has none).
func (m *allocSet) get(id string) (*allocation, bool) {
	if al, ok := m.own[id]; ok {
		return al, al != nil
	}
	al, ok := m.base[id]
	return al, ok
}

// set makes al gang id's allocation.
func (m *allocSet) set(id string, al *allocation) {
	if _, ok := m.get(id); !ok {
		m.n++
	}
	if m.own == nil {
		m.own = map[string]*allocation{}
	}
	m.own[id] = al
}

// remove forgets gang id.
func (m *allocSet) remove(id string) {
	if _, ok := m.get(id); !ok {
		return
	}
	m.n--
	if _, inBase := m.base[id]; !inBase {
		delete(m.own, id)
		return
	}
	if m.own == nil {
		m.own = map[string]*allocation{}
	}
	m.own[id] = nil
}

// len is the number of gangs the set holds.
func (m *allocSet) len() int { return m.n }

// all yields every gang and its allocation, in no order.
func (m *allocSet) all() iter.Seq2[string, *allocation] {
	return func(yield func(string, *allocation) bool) {
		for id, al := range m.base {
			if _, changed := m.own[id]; changed {
				continue
			}
			if !yield(id, al) {
				return
			}
		}
		for id, al := range m.own {
			if al != nil && !yield(id, al) {
				return
			}
		}
	}
}
