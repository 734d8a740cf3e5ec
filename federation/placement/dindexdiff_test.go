// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"reflect"
)

// dindexDiff names the parts of two domain indexes that differ, with their
// values, to say why a comparison of snapshots failed.
func dindexDiff(a, b *domainIndex) string {
	out := ""
	chk := func(n string, x, y any) { out += differs(n, x, y, true) }
	chk("stride", a.stride, b.stride)
	chk("own", a.own, b.own)
	chk("all", a.all, b.all)
	chk("hold", a.hold, b.hold)
	chk("held", a.held, b.held)
	chk("down", a.down, b.down)
	chk("heldNodes", a.heldNodes, b.heldNodes)
	chk("heldDoms", a.heldDoms, b.heldDoms)
	for l := range a.buckets {
		if a.buckets[l] != nil && b.buckets[l] != nil {
			chk(fmt.Sprint("buckets", l), *a.buckets[l], *b.buckets[l])
		} else if (a.buckets[l] == nil) != (b.buckets[l] == nil) {
			out += "bucketsnil "
		}
	}
	return out
}

// differs is n (and with values, x and y) when x and y differ, else "".
func differs(n string, x, y any, values bool) string {
	switch {
	case reflect.DeepEqual(x, y):
		return ""
	case values:
		return fmt.Sprintf("%s(%v vs %v) ", n, x, y)
	}
	return n + " "
}
