// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/users"
)

// access is who may call a method at all.
type access int

const (
	// accessRule: a user whose bindings allow the method's verb on its
	// resource (in the queue of the object it names).
	accessRule access = iota
	// accessPublic: anyone, without a client certificate (Register).
	accessPublic
	// accessAgent: the agent certificate of a registered cluster.
	accessAgent
	// accessUser: any user (CanI and WhoAmI answer for the caller).
	accessUser
	// accessSelf: any user, changing its own record only (RenewCertificate
	// renews the certificate the call came with); audited.
	accessSelf
)

// method is one row of the authorization table.
type method struct {
	access access
	verb   users.Verb
	res    users.Resource
	// target finds the object a request names and its queue and owner;
	// nil: the method names no queue (admin-only resources), and lists and
	// watches filter what they return.
	target func(ctx context.Context, a authorizer, req any) (target, error)
	// mutating calls are written to the audit log.
	mutating bool
	// batch calls carry many objects, each authorized by its handler and
	// written to the audit log as an entry of its own (batch.go).
	batch bool
}

// target is the object a call is about.
type target struct {
	object, queue, owner string
	// scoped: queue is the object's queue (else the check is "in some queue").
	scoped bool
	// anyOwner: the check is "some job of the queue" (a filtered list).
	anyOwner bool
	// job is the job of a submission, decoded for its queue and handed to
	// its handler (submittedJob) so that it is decoded once.
	job *v1alpha1.Job
}

// methods is the authorization table: every method the hub serves, what
// it needs, and whether the audit log records it. A method missing here is
// refused (TestEveryMethodInTable keeps it complete); docs/security.md
// shows the table by role.
var methods = map[string]method{
	// Clusters: the admin's, but Register (join token) and the agents' reports.
	shoalv1.Clusters_CreateJoinToken_FullMethodName:    admin(users.Create, users.JoinTokens, true),
	shoalv1.Clusters_ListJoinTokens_FullMethodName:     admin(users.List, users.JoinTokens, false),
	shoalv1.Clusters_RevokeJoinToken_FullMethodName:    admin(users.Delete, users.JoinTokens, true),
	shoalv1.Clusters_GetCluster_FullMethodName:         admin(users.Get, users.Clusters, false),
	shoalv1.Clusters_GetInventory_FullMethodName:       admin(users.Get, users.Clusters, false),
	shoalv1.Clusters_ListClusters_FullMethodName:       admin(users.List, users.Clusters, false),
	shoalv1.Clusters_CordonCluster_FullMethodName:      admin(users.Update, users.Clusters, true),
	shoalv1.Clusters_DrainCluster_FullMethodName:       admin(users.Update, users.Clusters, true),
	shoalv1.Clusters_DrainNode_FullMethodName:          admin(users.Update, users.Clusters, true),
	shoalv1.Clusters_RemoveCluster_FullMethodName:      admin(users.Delete, users.Clusters, true),
	shoalv1.Clusters_Register_FullMethodName:           {access: accessPublic, target: registerTarget, mutating: true},
	shoalv1.Clusters_Heartbeat_FullMethodName:          {access: accessAgent},
	shoalv1.Clusters_ReportInventory_FullMethodName:    {access: accessAgent},
	shoalv1.Clusters_ReportGitOpsStatus_FullMethodName: {access: accessAgent},
	// The agent passes on a checkpoint of a job placed on its own cluster
	// (the handler checks the placement); a periodic report, not audited.
	shoalv1.Clusters_ReportJobCheckpoint_FullMethodName: {access: accessAgent},
	// The agent reports the load of a service's replicas on its own
	// cluster (the handler checks they are there); periodic, not audited.
	shoalv1.Clusters_ReportServiceLoad_FullMethodName: {access: accessAgent},
	// Credentials of the calling agent's own cluster (the audit log's user
	// agent:<cluster> names it).
	shoalv1.Clusters_RenewCertificate_FullMethodName:    {access: accessAgent, mutating: true},
	shoalv1.Clusters_IssueHubCredentials_FullMethodName: {access: accessAgent, mutating: true},

	shoalv1.Jobs_Submit_FullMethodName: {verb: users.Create, res: users.Jobs, target: submitTarget, mutating: true},
	// SubmitBatch: let in for a user who may create jobs in some queue;
	// each job is then authorized in its queue by the Submit row above.
	shoalv1.Jobs_SubmitBatch_FullMethodName: {verb: users.Create, res: users.Jobs, target: submitBatchTarget, mutating: true, batch: true},
	// SubmitStream: let in as SubmitBatch; each batch of the stream is
	// then judged as SubmitBatch judges one.
	shoalv1.Jobs_SubmitStream_FullMethodName: {verb: users.Create, res: users.Jobs, target: submitStreamTarget, mutating: true, batch: true},
	shoalv1.Jobs_Get_FullMethodName:          {verb: users.Get, res: users.Jobs, target: jobTarget},
	shoalv1.Jobs_List_FullMethodName:         {verb: users.List, res: users.Jobs, target: listJobsTarget},
	shoalv1.Jobs_Watch_FullMethodName:        {verb: users.Watch, res: users.Jobs, target: watchJobsTarget},
	shoalv1.Jobs_Cancel_FullMethodName:       {verb: users.Cancel, res: users.Jobs, target: jobTarget, mutating: true},
	shoalv1.Jobs_Delete_FullMethodName:       {verb: users.Delete, res: users.Jobs, target: jobTarget, mutating: true},
	// A checkpoint report updates the job's status.checkpoint.
	shoalv1.Jobs_ReportCheckpoint_FullMethodName: {verb: users.Update, res: users.Jobs, target: jobTarget, mutating: true},

	shoalv1.Queues_Create_FullMethodName: {verb: users.Create, res: users.Queues, target: queueObjectTarget, mutating: true},
	shoalv1.Queues_Update_FullMethodName: {verb: users.Update, res: users.Queues, target: queueObjectTarget, mutating: true},
	shoalv1.Queues_Get_FullMethodName:    {verb: users.Get, res: users.Queues, target: queueNameTarget},
	shoalv1.Queues_List_FullMethodName:   {verb: users.List, res: users.Queues},
	shoalv1.Queues_Delete_FullMethodName: {verb: users.Delete, res: users.Queues, target: queueNameTarget, mutating: true},

	// Model versions are not in a queue: anyone with the verb in some queue.
	// GPU pools: the admin's to change; every role reads them.
	shoalv1.Pools_Create_FullMethodName: admin(users.Create, users.Pools, true),
	shoalv1.Pools_Update_FullMethodName: admin(users.Update, users.Pools, true),
	shoalv1.Pools_Delete_FullMethodName: admin(users.Delete, users.Pools, true),
	shoalv1.Pools_Get_FullMethodName:    {verb: users.Get, res: users.Pools},
	shoalv1.Pools_List_FullMethodName:   {verb: users.List, res: users.Pools},
	// Inference services: in a queue, with an owner, like jobs.
	shoalv1.Inference_Create_FullMethodName: {verb: users.Create, res: users.Services, target: createServiceTarget, mutating: true},
	shoalv1.Inference_Update_FullMethodName: {verb: users.Update, res: users.Services, target: serviceTarget, mutating: true},
	shoalv1.Inference_Get_FullMethodName:    {verb: users.Get, res: users.Services, target: serviceTarget},
	shoalv1.Inference_List_FullMethodName:   {verb: users.List, res: users.Services, target: listServicesTarget},
	shoalv1.Inference_Delete_FullMethodName: {verb: users.Delete, res: users.Services, target: serviceTarget, mutating: true},
	// A gateway's load report changes the service's status.load.
	shoalv1.Inference_ReportLoad_FullMethodName: {verb: users.Update, res: users.Services, target: serviceTarget, mutating: true},
	shoalv1.Models_Register_FullMethodName:      {verb: users.Create, res: users.Models, mutating: true},
	shoalv1.Models_Get_FullMethodName:           {verb: users.Get, res: users.Models},
	shoalv1.Models_List_FullMethodName:          {verb: users.List, res: users.Models},
	shoalv1.Models_Lineage_FullMethodName:       {verb: users.Get, res: users.Models},

	shoalv1.GitOps_SetSource_FullMethodName:  admin(users.Update, users.GitOps, true),
	shoalv1.GitOps_ListStatus_FullMethodName: admin(users.List, users.GitOps, false),

	shoalv1.Rollouts_CreateRollout_FullMethodName: admin(users.Create, users.Rollouts, true),
	shoalv1.Rollouts_GetRollout_FullMethodName:    admin(users.Get, users.Rollouts, false),
	shoalv1.Rollouts_ListRollouts_FullMethodName:  admin(users.List, users.Rollouts, false),
	shoalv1.Rollouts_PauseRollout_FullMethodName:  admin(users.Update, users.Rollouts, true),
	shoalv1.Rollouts_ResumeRollout_FullMethodName: admin(users.Update, users.Rollouts, true),
	shoalv1.Rollouts_AbortRollout_FullMethodName:  admin(users.Update, users.Rollouts, true),

	shoalv1.Users_CreateUser_FullMethodName:       admin(users.Create, users.UsersRes, true),
	shoalv1.Users_ListUsers_FullMethodName:        admin(users.List, users.UsersRes, false),
	shoalv1.Users_RevokeUser_FullMethodName:       {verb: users.Delete, res: users.UsersRes, target: revokeTarget, mutating: true},
	shoalv1.Users_CanI_FullMethodName:             {access: accessUser},
	shoalv1.Users_WhoAmI_FullMethodName:           {access: accessUser},
	shoalv1.Users_RenewCertificate_FullMethodName: {access: accessSelf, mutating: true},
}

// admin is a row for a resource only the admin role has: the request's
// name (when it has one) is the audited object.
func admin(verb users.Verb, res users.Resource, mutating bool) method {
	return method{verb: verb, res: res, target: nameTarget, mutating: mutating}
}

// named is a request with a name field.
type named interface{ GetName() string }

func nameTarget(_ context.Context, _ authorizer, req any) (target, error) {
	switch r := req.(type) {
	case named:
		return target{object: r.GetName()}, nil
	case *shoalv1.DrainNodeRequest:
		return target{object: r.GetCluster() + "/" + r.GetNode()}, nil
	case *shoalv1.SetGitOpsSourceRequest:
		return target{object: r.GetCluster()}, nil
	case *shoalv1.RevokeJoinTokenRequest:
		return target{object: r.GetId()}, nil
	}
	return target{}, nil
}

func registerTarget(_ context.Context, _ authorizer, req any) (target, error) {
	if r, ok := req.(*shoalv1.RegisterRequest); ok {
		return target{object: r.GetClusterName()}, nil
	}
	return target{}, nil
}

func revokeTarget(_ context.Context, _ authorizer, req any) (target, error) {
	r, _ := req.(*shoalv1.RevokeUserRequest)
	if r.GetSerial() != "" {
		return target{object: "serial:" + r.GetSerial()}, nil
	}
	return target{object: r.GetName()}, nil
}

// submitTarget decodes the job to submit: its queue, owned by the caller.
func submitTarget(ctx context.Context, _ authorizer, req any) (target, error) {
	r, _ := req.(*shoalv1.SubmitJobRequest)
	p, _ := PrincipalFrom(ctx)
	if len(r.GetJob().GetJson()) == 0 {
		return target{scoped: true, owner: p.Name}, nil // the handler refuses the empty job
	}
	j, err := v1alpha1.DecodeJob(r.Job.Json)
	if err != nil {
		return target{}, err
	}
	return target{object: j.Name, queue: j.Spec.Queue, owner: p.Name, scoped: true, job: j}, nil
}

// jobTarget reads the named job for its queue and owner.
func jobTarget(ctx context.Context, a authorizer, req any) (target, error) {
	r, _ := req.(named)
	name := ""
	if r != nil {
		name = r.GetName()
	}
	if a.jobs == nil {
		return target{}, errorNoJobs
	}
	j, _, err := a.jobs.Get(ctx, name)
	if err != nil {
		return target{object: name}, err
	}
	return target{object: name, queue: j.Spec.Queue, owner: j.Status.Owner, scoped: true}, nil
}

// listJobsTarget scopes a list to its queue filter, when it has one; the
// handler filters the items in either case.
// watchJobsTarget: a watch asks for "some job in some queue" (the stream
// interceptor has no request; the handler filters every event, mayWatch),
// so that a submitter, who may watch only its own jobs, may watch at all.
func watchJobsTarget(context.Context, authorizer, any) (target, error) {
	return target{anyOwner: true}, nil
}

func listJobsTarget(_ context.Context, _ authorizer, req any) (target, error) {
	r, _ := req.(*shoalv1.ListJobsRequest)
	if q := r.GetQueue(); q != "" {
		return target{queue: q, scoped: true, anyOwner: true}, nil
	}
	return target{anyOwner: true}, nil
}

func queueObjectTarget(_ context.Context, _ authorizer, req any) (target, error) {
	var o *shoalv1.Object
	switch r := req.(type) {
	case *shoalv1.CreateQueueRequest:
		o = r.GetQueue()
	case *shoalv1.UpdateQueueRequest:
		o = r.GetQueue()
	}
	if len(o.GetJson()) == 0 {
		return target{scoped: true}, nil // the handler refuses the empty queue
	}
	q, err := v1alpha1.DecodeQueue(o.Json)
	if err != nil {
		return target{}, err
	}
	return target{object: q.Name, queue: q.Name, scoped: true}, nil
}

func queueNameTarget(_ context.Context, _ authorizer, req any) (target, error) {
	r, _ := req.(named)
	if r == nil {
		return target{scoped: true}, nil
	}
	return target{object: r.GetName(), queue: r.GetName(), scoped: true}, nil
}
