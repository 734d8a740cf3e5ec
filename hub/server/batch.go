// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/audit"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/users"
)

// SubmitBatch submits each job of the request as Submit would: the
// interceptor lets the call in when the caller may create jobs in some
// queue (submitBatchTarget), and each job is then judged on its own
// (submitBatch).
func (s *jobsServer) SubmitBatch(ctx context.Context, req *shoalv1.SubmitJobBatchRequest) (*shoalv1.SubmitJobBatchResponse, error) {
	if err := checkBatchSize(len(req.GetJobs())); err != nil {
		return nil, err
	}
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	return s.submitBatch(ctx, shoalv1.Jobs_SubmitBatch_FullMethodName, p, req), nil
}

// submitBatch judges one batch of a size checkBatchSize let through, for
// p, in a call of method: each job is authorized by Submit's row of the
// authorization table for its own queue, decoded, validated and stored on
// its own; each gets a result, and an audit entry (batchAudit).
func (s *jobsServer) submitBatch(ctx context.Context, method string, p users.Principal, req *shoalv1.SubmitJobBatchRequest) *shoalv1.SubmitJobBatchResponse {
	row := methods[shoalv1.Jobs_Submit_FullMethodName]
	items := make([]jobs.BatchItem, len(req.Jobs))
	for i, o := range req.Jobs {
		j, err := v1alpha1.DecodeJob(o.GetJson())
		if err != nil {
			items[i].Err = err
			continue
		}
		items[i].In = j
		r := users.Request{Verb: row.verb, Resource: row.res, Queue: j.Spec.Queue, Owner: p.Name}
		if d := users.Allowed(p, r); !d.Allowed {
			items[i].Err = errs.Denied("%s: %s", shortMethod(shoalv1.Jobs_Submit_FullMethodName), d.Reason)
		}
	}
	s.jobs.SubmitBatchAs(ctx, items, p.Name, req.DryRun)
	out := &shoalv1.SubmitJobBatchResponse{Results: make([]*shoalv1.SubmitJobResult, len(items))}
	log := batchAuditFrom(ctx)
	for i, it := range items {
		r := &shoalv1.SubmitJobResult{Result: string(it.Result)}
		if it.Err == nil {
			if r.Job, it.Err = object(it.Job, it.Revision); it.Err != nil {
				r.Result = ""
			}
		}
		var st *status.Status
		if it.Err != nil {
			st = status.Convert(toStatus(ctx, method, it.Err))
			r.Error = &shoalv1.SubmitJobError{Code: int32(st.Code()), Message: st.Message()} //nolint:gosec // gRPC codes are small
		}
		log.add(it.In, st)
		out.Results[i] = r
	}
	return out
}

// checkBatchSize refuses an empty batch or one over jobs.MaxBatch.
func checkBatchSize(n int) error {
	if n == 0 || n > jobs.MaxBatch {
		return status.Error(codes.InvalidArgument, fmt.Sprintf(
			"a batch holds 1 to %d jobs (set jobs to Jobs in JSON), not %d; split it", jobs.MaxBatch, n))
	}
	return nil
}

// submitBatchTarget: a batch is let in for a caller that may create jobs
// in some queue, owned by itself; SubmitBatch authorizes each job in its
// queue.
func submitBatchTarget(ctx context.Context, a authorizer, req any) (target, error) {
	r, _ := req.(*shoalv1.SubmitJobBatchRequest)
	if err := checkBatchSize(len(r.GetJobs())); err != nil {
		return target{}, err
	}
	return submitStreamTarget(ctx, a, nil)
}

// submitStreamTarget: a stream of batches is let in, as a batch, for a
// caller that may create jobs in some queue, owned by itself (a stream has
// no request when it is authorized); SubmitStream checks each batch's size
// and authorizes each job in its queue.
func submitStreamTarget(ctx context.Context, _ authorizer, _ any) (target, error) {
	p, _ := PrincipalFrom(ctx)
	return target{owner: p.Name}, nil
}

type batchAuditKey struct{}

// batchAudit collects the audit entries of a batch's jobs, one each, that
// the interceptor writes when the call ends (authorizer.recordBatch); a
// stream's handler writes them after each batch (flush).
type batchAudit struct {
	mu      sync.Mutex
	entries []audit.Entry
	// write writes entries to the audit log for the call (set by the
	// stream interceptor; nil for a unary call).
	write func([]audit.Entry)
}

func batchAuditFrom(ctx context.Context) *batchAudit {
	b, _ := ctx.Value(batchAuditKey{}).(*batchAudit)
	return b
}

// add records one job's outcome (st nil: accepted); a nil b records nothing
// (a server without the authorizer: tests).
func (b *batchAudit) add(j *v1alpha1.Job, st *status.Status) {
	if b == nil {
		return
	}
	e := audit.Entry{Code: codes.OK.String()}
	if j != nil {
		e.Object, e.Queue = j.Name, j.Spec.Queue
	}
	if st != nil {
		e.Code, e.Error = st.Code().String(), st.Message()
	}
	b.mu.Lock()
	b.entries = append(b.entries, e)
	b.mu.Unlock()
}

// take returns the entries collected since the last take and forgets them.
func (b *batchAudit) take() []audit.Entry {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entries
	b.entries = nil
	return e
}

// flush writes the entries collected so far (a stream's, after each
// batch); a nil b, or one of a unary call, writes nothing.
func (b *batchAudit) flush() {
	if b == nil || b.write == nil {
		return
	}
	if e := b.take(); len(e) > 0 {
		b.write(e)
	}
}
