// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/rollout"
	"github.com/shoal-dev/shoal/hub/store"
)

func TestToStatus(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("doing something: %w", err) }
	tests := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil", nil, codes.OK},
		{"bad token", wrap(registry.ErrInvalidToken), codes.Unauthenticated},
		{"revoked certificate", wrap(registry.ErrCertificateRevoked), codes.PermissionDenied},
		{"unknown identity", wrap(pki.ErrUnknownIdentity), codes.PermissionDenied},
		{"bad CSR through registry", fmt.Errorf("%w: %w", registry.ErrInvalid, pki.ErrBadCSR), codes.InvalidArgument},
		{"invalid object", wrap(v1alpha1.NewInvalidError("Job", "a", field.ErrorList{field.Required(field.NewPath("spec", "queue"), "")})), codes.InvalidArgument},
		{"decode", wrap(&v1alpha1.DecodeError{}), codes.InvalidArgument},
		{"bad continue", wrap(store.ErrInvalidContinue), codes.InvalidArgument},
		{"name taken", wrap(registry.ErrClusterExists), codes.AlreadyExists},
		{"uid taken", wrap(registry.ErrUIDRegistered), codes.AlreadyExists},
		{"store exists", wrap(store.ErrAlreadyExists), codes.AlreadyExists},
		{"registry not found", wrap(registry.ErrNotFound), codes.NotFound},
		{"store not found", wrap(store.ErrNotFound), codes.NotFound},
		{"precondition", wrap(errs.Precondition("queue has jobs", "delete them")), codes.FailedPrecondition},
		{"conflict", wrap(store.ErrConflict), codes.Aborted},
		{"compacted", errors.Join(store.ErrCompacted, errors.New("etcd")), codes.OutOfRange},
		{"etcd timed out", errors.Join(store.ErrUnavailable, errors.New("etcdserver: request timed out")), codes.Unavailable},
		{"hub cluster down", wrap(registry.ErrHubCluster), codes.Unavailable},
		{"dependency unavailable", wrap(errs.Unavailable("the hub cluster", errors.New("connection refused"))), codes.Unavailable},
		{"dependency timed out is unavailable", errs.Unavailable("the hub cluster", context.DeadlineExceeded), codes.Unavailable},
		{"rollout invalid", wrap(rollout.ErrInvalid), codes.InvalidArgument},
		{"rollout not found", wrap(rollout.ErrNotFound), codes.NotFound},
		{"rollout conflict", wrap(rollout.ErrConflict), codes.FailedPrecondition},
		{"deadline", wrap(context.DeadlineExceeded), codes.DeadlineExceeded},
		{"status passes through", status.Error(codes.ResourceExhausted, "slow down"), codes.ResourceExhausted},
		{"unknown is internal", errors.New("disk on fire"), codes.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := toStatus(context.Background(), "/shoal.v1alpha1.Jobs/Submit", tt.err)
			if c := status.Code(got); c != tt.want {
				t.Fatalf("code = %s, want %s (%v)", c, tt.want, got)
			}
			if tt.want == codes.Internal && status.Convert(got).Message() == tt.err.Error() {
				t.Fatal("internal error text leaked to the client")
			}
		})
	}
}

// TestToStatusKeepsTheCause checks that a known error reaches the client
// with its whole text: an Unavailable says what failed and why.
func TestToStatusKeepsTheCause(t *testing.T) {
	cause := errors.New(`pods "x" is forbidden: User "shoal-hub" cannot create resource "podtemplates"`)
	err := fmt.Errorf("check template: %w", errs.Unavailable("the hub cluster", cause))
	st := status.Convert(toStatus(context.Background(), "/shoal.v1alpha1.Jobs/Submit", err))
	if st.Code() != codes.Unavailable || st.Message() != err.Error() {
		t.Fatalf("status = %s %q, want Unavailable %q", st.Code(), st.Message(), err)
	}
}

// TestSubmitHubClusterUnreachable checks the whole path: a job whose
// template dry-run cannot reach the hub cluster is refused over gRPC with
// Unavailable and the cause, and is not stored.
func TestSubmitHubClusterUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close() // nobody listens there any more
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	jc, qc := intakeClients(t, jobs.WithTemplateValidator(jobs.NewDryRunValidator(cs, "")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := qc.Create(ctx, &shoalv1.CreateQueueRequest{Queue: &shoalv1.Object{Json: []byte(queueJSON)}}); err != nil {
		t.Fatal(err)
	}
	_, err = jc.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: []byte(jobJSON)}})
	wantCode(t, err, codes.Unavailable, "the hub cluster is unavailable")
	wantCode(t, err, codes.Unavailable, addr+": connect: connection refused")
	_, err = jc.Get(ctx, &shoalv1.GetJobRequest{Name: "llama"})
	wantCode(t, err, codes.NotFound, "llama")
}

func TestShortMethod(t *testing.T) {
	for in, want := range map[string]string{
		"/shoal.v1alpha1.Clusters/Register": "Clusters/Register",
		"/grpc.health.v1.Health/Check":      "Health/Check",
		"Plain":                             "Plain",
	} {
		if got := shortMethod(in); got != want {
			t.Errorf("shortMethod(%q) = %q, want %q", in, got, want)
		}
	}
}
