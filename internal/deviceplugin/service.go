// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// EnvVisibleDevices is the variable Allocate sets, as NVIDIA's device plugin
// does with its envvar strategy: the allocated device IDs, comma-separated.
const EnvVisibleDevices = "NVIDIA_VISIBLE_DEVICES"

// options is what the plugin tells the kubelet: no PreStartContainer call,
// no preferred allocation.
var options = &pluginapi.DevicePluginOptions{}

// service is the DevicePlugin gRPC service over a device set.
type service struct {
	pluginapi.UnimplementedDevicePluginServer
	devs *devices
}

// GetDevicePluginOptions returns options.
func (s *service) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return options, nil
}

// ListAndWatch sends the devices, then again on every health change, until
// the kubelet ends the stream or the server stops.
func (s *service) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	for {
		devs, changed := s.devs.snapshot()
		if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: devs}); err != nil {
			return err
		}
		select {
		case <-changed:
		case <-stream.Context().Done():
			return nil
		}
	}
}

// Allocate answers each container request with NVIDIA_VISIBLE_DEVICES set
// to its device IDs, in the order asked, and nothing else. An ID that is not
// one of the plugin's devices is an InvalidArgument error.
func (s *service) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		for _, id := range c.DevicesIds {
			if !s.devs.has(id) {
				return nil, status.Errorf(codes.InvalidArgument, "unknown device %q", id)
			}
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{EnvVisibleDevices: strings.Join(c.DevicesIds, ",")},
		})
	}
	return resp, nil
}

// GetPreferredAllocation is not advertised (options), so the kubelet does
// not call it; asked anyway, it prefers the must-include devices, then the
// available ones in the order given.
func (s *service) GetPreferredAllocation(_ context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	resp := &pluginapi.PreferredAllocationResponse{}
	for _, c := range req.ContainerRequests {
		size := max(int(c.AllocationSize), 0)
		picked := make([]string, 0, size)
		seen := map[string]bool{}
		for _, id := range append(append([]string{}, c.MustIncludeDeviceIDs...), c.AvailableDeviceIDs...) {
			if len(picked) == size {
				break
			}
			if !seen[id] {
				seen[id] = true
				picked = append(picked, id)
			}
		}
		resp.ContainerResponses = append(resp.ContainerResponses,
			&pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: picked})
	}
	return resp, nil
}

// PreStartContainer is not asked for (options); it does nothing.
func (s *service) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}
