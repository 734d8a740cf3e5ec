// SPDX-License-Identifier: Apache-2.0

package server

import (
	"bytes"
	"context"

	"google.golang.org/grpc"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/rollout"
)

// rolloutsServer serves the Rollouts service (admin) from the controller.
type rolloutsServer struct {
	shoalv1.UnimplementedRolloutsServer
	ctrl *rollout.Controller
}

// RolloutsService registers the Rollouts service over ctrl.
func RolloutsService(ctrl *rollout.Controller) func(grpc.ServiceRegistrar) {
	return func(r grpc.ServiceRegistrar) { shoalv1.RegisterRolloutsServer(r, &rolloutsServer{ctrl: ctrl}) }
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// rolloutObject encodes a rollout (or the error of the call that made it).
func rolloutObject(r *v1alpha1.Rollout, err error) (*shoalv1.Object, error) {
	if err != nil {
		return nil, err
	}
	return object(r, 0)
}

func (s *rolloutsServer) CreateRollout(ctx context.Context, req *shoalv1.CreateRolloutRequest) (*shoalv1.Object, error) {
	soak, err := requestSeconds("soak_seconds", req.SoakSeconds)
	if err != nil {
		return nil, err
	}
	waveTimeout, err := requestSeconds("wave_timeout_seconds", req.WaveTimeoutSeconds)
	if err != nil {
		return nil, err
	}
	return rolloutObject(s.ctrl.Create(ctx, rollout.CreateRequest{
		Name: req.Name, Revision: req.Revision, Selector: req.Selector, Waves: req.Waves,
		Soak: soak, WaveTimeout: waveTimeout,
	}))
}

func (s *rolloutsServer) GetRollout(ctx context.Context, req *shoalv1.RolloutRequest) (*shoalv1.Object, error) {
	return rolloutObject(s.ctrl.Get(ctx, req.Name))
}

func (s *rolloutsServer) ListRollouts(ctx context.Context, _ *shoalv1.ListRolloutsRequest) (*shoalv1.ListRolloutsResponse, error) {
	list, err := s.ctrl.List(ctx)
	if err != nil {
		return nil, err
	}
	resp := &shoalv1.ListRolloutsResponse{}
	for _, r := range list {
		obj, err := object(r, 0)
		if err != nil {
			return nil, err
		}
		resp.Items = append(resp.Items, obj)
	}
	return resp, nil
}

func (s *rolloutsServer) PauseRollout(ctx context.Context, req *shoalv1.RolloutRequest) (*shoalv1.Object, error) {
	return rolloutObject(s.ctrl.Pause(ctx, req.Name))
}

func (s *rolloutsServer) ResumeRollout(ctx context.Context, req *shoalv1.RolloutRequest) (*shoalv1.Object, error) {
	return rolloutObject(s.ctrl.Resume(ctx, req.Name))
}

func (s *rolloutsServer) AbortRollout(ctx context.Context, req *shoalv1.RolloutRequest) (*shoalv1.Object, error) {
	return rolloutObject(s.ctrl.Abort(ctx, req.Name))
}
