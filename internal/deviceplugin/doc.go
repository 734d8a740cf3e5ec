// SPDX-License-Identifier: Apache-2.0

// Package deviceplugin is a kubelet device plugin of simulated GPUs for the
// local fleet's real nodes: it speaks the kubelet device-plugin API
// (deviceplugin/v1beta1), so the kubelet advertises and admits GPU pods
// exactly as it does with NVIDIA's plugin. It advertises a fixed number of
// devices of one resource (nvidia.com/gpu by default) with IDs unique across
// the fleet, lets a file mark devices unhealthy, and on Allocate sets
// NVIDIA_VISIBLE_DEVICES in the container, as NVIDIA's plugin does with its
// envvar strategy; there is no hardware behind the IDs, so it mounts nothing
// and passes no device nodes.
//
// GPU Feature Discovery's node labels (product, memory, count, NVLink
// clique, ...) are not this package's job: the fleet labels each node from
// its profile.
package deviceplugin
