// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"slices"
	"strconv"
	"sync"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// DeviceIDs is the IDs of n devices: prefix-0 … prefix-(n-1).
func DeviceIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = prefix + "-" + strconv.Itoa(i)
	}
	return ids
}

// devices is the plugin's device set and the health of each device. Every
// change closes the channel handed out with the previous snapshot.
type devices struct {
	ids []string

	mu        sync.Mutex
	unhealthy map[string]bool
	changed   chan struct{}
}

func newDevices(ids []string) *devices {
	return &devices{ids: ids, unhealthy: map[string]bool{}, changed: make(chan struct{})}
}

// has reports whether id is one of the devices.
func (d *devices) has(id string) bool { return slices.Contains(d.ids, id) }

// snapshot is the device list as ListAndWatch sends it, and a channel that
// is closed on the next health change.
func (d *devices) snapshot() ([]*pluginapi.Device, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*pluginapi.Device, len(d.ids))
	for i, id := range d.ids {
		h := pluginapi.Healthy
		if d.unhealthy[id] {
			h = pluginapi.Unhealthy
		}
		out[i] = &pluginapi.Device{ID: id, Health: h}
	}
	return out, d.changed
}

// setUnhealthy makes exactly the devices in ids unhealthy (IDs that are not
// devices are ignored) and reports whether anything changed.
func (d *devices) setUnhealthy(ids map[string]bool) bool {
	next := map[string]bool{}
	for id := range ids {
		if d.has(id) {
			next[id] = true
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if mapsEqual(next, d.unhealthy) {
		return false
	}
	d.unhealthy = next
	close(d.changed)
	d.changed = make(chan struct{})
	return true
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
