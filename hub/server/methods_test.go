// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"crypto/x509"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/hub/users"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// TestEveryMethodInTable fails when a method the hub serves has no row in
// the authorization table (it would be refused), or a row names no method.
func TestEveryMethodInTable(t *testing.T) {
	served := map[string]bool{}
	for _, d := range []grpc.ServiceDesc{shoalv1.Clusters_ServiceDesc, shoalv1.Jobs_ServiceDesc, shoalv1.Queues_ServiceDesc,
		shoalv1.GitOps_ServiceDesc, shoalv1.Rollouts_ServiceDesc, shoalv1.Users_ServiceDesc, shoalv1.Models_ServiceDesc,
		shoalv1.Inference_ServiceDesc, shoalv1.Pools_ServiceDesc} {
		for _, m := range d.Methods {
			served["/"+d.ServiceName+"/"+m.MethodName] = true
		}
		for _, s := range d.Streams {
			served["/"+d.ServiceName+"/"+s.StreamName] = true
		}
	}
	for m := range served {
		if _, ok := methods[m]; !ok {
			t.Errorf("%s has no row in the authorization table", m)
		}
	}
	for m, row := range methods {
		if !served[m] {
			t.Errorf("table row %s names no served method", m)
		}
		if row.access == accessRule && row.verb == "" {
			t.Errorf("%s: a rule row needs a verb and a resource", m)
		}
	}
}

// fakeJobs serves jobs by name.
type fakeJobs map[string]*v1alpha1.Job

func (f fakeJobs) Get(_ context.Context, name string) (*v1alpha1.Job, int64, error) {
	if j, ok := f[name]; ok {
		return j, 1, nil
	}
	return nil, 0, store.ErrNotFound
}

// TestAuthorizeByRoleAndQueue runs requests of each role through the
// interceptor's check, with real requests, against the table.
func TestAuthorizeByRoleAndQueue(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert := func(name string) *x509.Certificate {
		p, _, err := ca.ClientCertificate(pki.UserCommonName(name), []string{pki.UserGroup}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := pki.ParseCertificatePEM(p)
		return c
	}
	bind := func(role v1alpha1.UserRole, q string) []v1alpha1.RoleBinding {
		return []v1alpha1.RoleBinding{{Role: role, Queue: q}}
	}
	fu := fakeUsers{
		"sub":   {Name: "sub", Bindings: bind(v1alpha1.UserRoleSubmitter, "a/b")},
		"other": {Name: "other", Bindings: bind(v1alpha1.UserRoleSubmitter, "a/b")},
		"view":  {Name: "view", Bindings: bind(v1alpha1.UserRoleViewer, "a")},
		"qa":    {Name: "qa", Bindings: bind(v1alpha1.UserRoleQueueAdmin, "a/b")},
		"two": {Name: "two", Bindings: []v1alpha1.RoleBinding{{Role: v1alpha1.UserRoleViewer, Queue: "a"},
			{Role: v1alpha1.UserRoleSubmitter, Queue: "x"}}},
	}
	ownJob := testjob.New("own").Queue("a/b").Obj()
	ownJob.Status.Owner = "sub"
	othersJob := testjob.New("others").Queue("a/b").Obj()
	othersJob.Status.Owner = "other"
	auth := authorizer{users: fu, jobs: fakeJobs{"own": ownJob, "others": othersJob}}

	submit := func(name, queue string) *shoalv1.SubmitJobRequest {
		j := testjob.New(name).Queue(queue).Obj()
		o, err := object(j, 0)
		if err != nil {
			t.Fatal(err)
		}
		return &shoalv1.SubmitJobRequest{Job: o}
	}
	queue := func(name string) *shoalv1.CreateQueueRequest {
		q := &v1alpha1.Queue{}
		q.APIVersion, q.Kind, q.Name = v1alpha1.APIVersion, v1alpha1.KindQueue, name
		o, err := object(q, 0)
		if err != nil {
			t.Fatal(err)
		}
		return &shoalv1.CreateQueueRequest{Queue: o}
	}
	tests := []struct {
		name, user, method string
		req                any
		want               codes.Code
	}{
		{"submitter submits into its queue", "sub", shoalv1.Jobs_Submit_FullMethodName, submit("j", "a/b"), codes.OK},
		{"submitter submits below its queue", "sub", shoalv1.Jobs_Submit_FullMethodName, submit("j", "a/b/c"), codes.OK},
		{"submitter submits to a sibling", "sub", shoalv1.Jobs_Submit_FullMethodName, submit("j", "a/c"), codes.PermissionDenied},
		{"submitter submits to a prefix sibling", "sub", shoalv1.Jobs_Submit_FullMethodName, submit("j", "a/bc"), codes.PermissionDenied},
		{"submitter submits to the parent", "sub", shoalv1.Jobs_Submit_FullMethodName, submit("j", "a"), codes.PermissionDenied},
		{"submitter reads its job", "sub", shoalv1.Jobs_Get_FullMethodName, &shoalv1.GetJobRequest{Name: "own"}, codes.OK},
		{"submitter reads another's job", "sub", shoalv1.Jobs_Get_FullMethodName, &shoalv1.GetJobRequest{Name: "others"}, codes.PermissionDenied},
		{"submitter cancels its job", "sub", shoalv1.Jobs_Cancel_FullMethodName, &shoalv1.CancelJobRequest{Name: "own"}, codes.OK},
		{"submitter cancels another's job", "sub", shoalv1.Jobs_Cancel_FullMethodName, &shoalv1.CancelJobRequest{Name: "others"}, codes.PermissionDenied},
		{"submitter deletes its job", "sub", shoalv1.Jobs_Delete_FullMethodName, &shoalv1.DeleteJobRequest{Name: "own"}, codes.OK},
		{"submitter deletes another's job", "sub", shoalv1.Jobs_Delete_FullMethodName, &shoalv1.DeleteJobRequest{Name: "others"}, codes.PermissionDenied},
		{"viewer deletes a job", "view", shoalv1.Jobs_Delete_FullMethodName, &shoalv1.DeleteJobRequest{Name: "others"}, codes.PermissionDenied},
		{"queue-admin deletes another's job", "qa", shoalv1.Jobs_Delete_FullMethodName, &shoalv1.DeleteJobRequest{Name: "others"}, codes.OK},
		{"cancel of a missing job", "sub", shoalv1.Jobs_Cancel_FullMethodName, &shoalv1.CancelJobRequest{Name: "nope"}, codes.NotFound},
		{"submitter lists jobs of its queue", "sub", shoalv1.Jobs_List_FullMethodName, &shoalv1.ListJobsRequest{Queue: "a/b"}, codes.OK},
		{"submitter lists jobs of a sibling", "sub", shoalv1.Jobs_List_FullMethodName, &shoalv1.ListJobsRequest{Queue: "a/c"}, codes.PermissionDenied},
		{"submitter watches jobs (the stream filters them)", "sub", shoalv1.Jobs_Watch_FullMethodName, nil, codes.OK},
		{"viewer watches jobs", "view", shoalv1.Jobs_Watch_FullMethodName, nil, codes.OK},
		{"submitter creates a queue", "sub", shoalv1.Queues_Create_FullMethodName, queue("a/b/n"), codes.PermissionDenied},
		{"viewer reads another's job", "view", shoalv1.Jobs_Get_FullMethodName, &shoalv1.GetJobRequest{Name: "others"}, codes.OK},
		{"viewer cancels", "view", shoalv1.Jobs_Cancel_FullMethodName, &shoalv1.CancelJobRequest{Name: "others"}, codes.PermissionDenied},
		{"viewer submits", "view", shoalv1.Jobs_Submit_FullMethodName, submit("j", "a/b"), codes.PermissionDenied},
		{"viewer creates a queue", "view", shoalv1.Queues_Create_FullMethodName, queue("a/n"), codes.PermissionDenied},
		{"viewer deletes a queue", "view", shoalv1.Queues_Delete_FullMethodName, &shoalv1.DeleteQueueRequest{Name: "a"}, codes.PermissionDenied},
		{"viewer reads a queue", "view", shoalv1.Queues_Get_FullMethodName, &shoalv1.GetQueueRequest{Name: "a/b"}, codes.OK},
		{"viewer reads a queue outside", "view", shoalv1.Queues_Get_FullMethodName, &shoalv1.GetQueueRequest{Name: "z"}, codes.PermissionDenied},
		{"queue-admin creates below", "qa", shoalv1.Queues_Create_FullMethodName, queue("a/b/n"), codes.OK},
		{"queue-admin creates outside", "qa", shoalv1.Queues_Create_FullMethodName, queue("a/c"), codes.PermissionDenied},
		{"queue-admin cancels another's job", "qa", shoalv1.Jobs_Cancel_FullMethodName, &shoalv1.CancelJobRequest{Name: "others"}, codes.OK},
		{"queue-admin lists clusters", "qa", shoalv1.Clusters_ListClusters_FullMethodName, &shoalv1.ListClustersRequest{}, codes.PermissionDenied},
		{"queue-admin creates users", "qa", shoalv1.Users_CreateUser_FullMethodName, &shoalv1.CreateUserRequest{Name: "x"}, codes.PermissionDenied},
		{"two bindings: submit via the second", "two", shoalv1.Jobs_Submit_FullMethodName, submit("j", "x/y"), codes.OK},
		{"two bindings: read via the first", "two", shoalv1.Jobs_Get_FullMethodName, &shoalv1.GetJobRequest{Name: "others"}, codes.OK},
		{"two bindings: no submit via the viewer one", "two", shoalv1.Jobs_Submit_FullMethodName, submit("j", "a/b"), codes.PermissionDenied},
		{"unknown user", "ghost", shoalv1.Jobs_List_FullMethodName, &shoalv1.ListJobsRequest{}, codes.PermissionDenied},
		{"submitter reports its job's checkpoint", "sub", shoalv1.Jobs_ReportCheckpoint_FullMethodName, &shoalv1.ReportCheckpointRequest{Name: "own"}, codes.OK},
		{"submitter reports another's checkpoint", "sub", shoalv1.Jobs_ReportCheckpoint_FullMethodName, &shoalv1.ReportCheckpointRequest{Name: "others"}, codes.PermissionDenied},
		{"queue-admin reports another's checkpoint", "qa", shoalv1.Jobs_ReportCheckpoint_FullMethodName, &shoalv1.ReportCheckpointRequest{Name: "others"}, codes.OK},
		{"viewer reports a checkpoint", "view", shoalv1.Jobs_ReportCheckpoint_FullMethodName, &shoalv1.ReportCheckpointRequest{Name: "others"}, codes.PermissionDenied},
		{"submitter registers a model version", "sub", shoalv1.Models_Register_FullMethodName, &shoalv1.RegisterModelVersionRequest{}, codes.OK},
		{"viewer registers a model version", "view", shoalv1.Models_Register_FullMethodName, &shoalv1.RegisterModelVersionRequest{}, codes.PermissionDenied},
		{"viewer reads a lineage", "view", shoalv1.Models_Lineage_FullMethodName, &shoalv1.GetModelVersionRequest{Name: "m@1"}, codes.OK},
		{"a user reports as an agent", "sub", shoalv1.Clusters_ReportJobCheckpoint_FullMethodName, &shoalv1.ReportCheckpointRequest{Name: "own"}, codes.PermissionDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, _, err := auth.authorize(withPeer(cert(tt.user)), tt.method, tt.req)
			if got := status.Code(err); got != tt.want {
				t.Fatalf("code %s (%v), want %s", got, err, tt.want)
			}
			if err == nil {
				if p, ok := PrincipalFrom(ctx); !ok || p.Name != tt.user {
					t.Fatalf("principal not in context: %+v", p)
				}
			}
		})
	}
}

// TestAuditRecordsMutatingCalls checks which calls reach the audit log:
// every user call that changes something, and of the agents' calls only
// those that hand out credentials (not the periodic reports).
func TestAuditRecordsMutatingCalls(t *testing.T) {
	agentCredentials := map[string]bool{
		shoalv1.Clusters_RenewCertificate_FullMethodName: true, shoalv1.Clusters_IssueHubCredentials_FullMethodName: true}
	for m, row := range methods {
		want := row.access == accessSelf || (row.access != accessAgent || agentCredentials[m]) && row.access != accessUser && row.verb != users.Get &&
			row.verb != users.List && row.verb != users.Watch
		if row.mutating != want {
			t.Errorf("%s: mutating = %v, want %v", m, row.mutating, want)
		}
	}
}
