// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/internal/tracing"
)

// Batch limits.
const (
	// MaxBatch is the most jobs one SubmitBatchAs takes.
	MaxBatch = 1000
	// txnJobs is the most jobs one store transaction of a batch writes
	// (about 2 KiB each: well under etcd's 1.5 MiB request limit and the
	// embedded store's 4,096 operations).
	txnJobs = 100
	// admitWorkers validate a batch's jobs concurrently (each may wait on
	// the hub cluster's dry-run).
	admitWorkers = 8
)

// BatchItem is one job of a batch and what became of it: Job, Revision
// and Result as Submit returns them, or Err, the refusal Submit would
// have returned for that job alone.
type BatchItem struct {
	// In is the job to submit; an item that arrives with Err set (the
	// caller could not decode it, or may not submit it) is left as it is.
	In       *v1alpha1.Job
	Job      *v1alpha1.Job
	Revision int64
	Result   Result
	Err      error
}

// SubmitBatchAs submits every item's job on behalf of owner, each accepted
// or refused on its own exactly as SubmitAs would (the same defaults,
// validation, pod-template dry-run and reference checks), and sets each
// item's outcome. Accepted jobs are stored together, up to txnJobs per
// store transaction, guarded as SubmitAs guards one job: each name absent,
// each queue unchanged since it was read. When such a transaction's guard
// fails (a name taken meanwhile, a queue changed), its jobs are stored one
// by one as SubmitAs stores them, so that each gets its own answer. A name
// twice in one batch is stored once; the later items get what a
// resubmission gets (Existing, or AlreadyExists for another spec).
func (s *Service) SubmitBatchAs(ctx context.Context, items []BatchItem, owner string, dryRun bool) {
	start := time.Now()
	hashes := make([]string, len(items))
	levels := &levelMemo{}
	s.admitAll(ctx, items, hashes, owner, start, levels)
	var pending []int
	for i := range items {
		it := &items[i]
		switch {
		case it.Err != nil: // counted by admitAll, or refused before the intake (as Submit: not counted)
		case dryRun:
			it.Result = DryRun
			observeSubmit(start, DryRun, nil)
		default:
			tracing.NewAttempt(start).Annotate(it.Job.Annotations)
			pending = append(pending, i)
		}
	}
	for len(pending) > 0 {
		n := min(len(pending), txnJobs)
		s.putChunk(ctx, items, hashes, pending[:n], owner, start, levels)
		pending = pending[n:]
	}
}

// admitAll admits every item without an error, admitWorkers at a time,
// and counts each refusal as Submit does.
func (s *Service) admitAll(ctx context.Context, items []BatchItem, hashes []string, owner string, start time.Time, levels *levelMemo) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(admitWorkers, len(items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				j, hash, err := s.admit(ctx, items[i].In, levels)
				if err != nil {
					items[i].Err = err
					observeSubmit(start, "", err)
					continue
				}
				j.Status.Owner = owner
				items[i].Job, hashes[i] = j, hash
			}
		}()
	}
	for i := range items {
		if items[i].Err == nil {
			work <- i
		}
	}

	close(work)
	wg.Wait()
}

// putChunk stores the admitted items idx in one transaction, or one by one
// (put) when that transaction's guards fail for another reason than a
// queue's revision, or the chunk cannot go together. Each queue of the
// chunk is read again first (serializably), so that the transaction is
// guarded on its revision now, not at the batch's admission; an item whose
// queue's pod-security level changed meanwhile is checked against the new
// level. When the transaction fails, the queues are read again
// (linearizably) and the chunk sorted and checked again against them;
// when a queue's revision moved (the scheduler writes a queue's status
// about once a second under a steady intake, and every such write failed
// the chunks in flight) it is tried again, up to maxAttempts times: stored
// one by one, a chunk of 100 took 100 transactions.
func (s *Service) putChunk(ctx context.Context, items []BatchItem, hashes []string, idx []int, owner string, start time.Time, levels *levelMemo) {
	together, alone, reads := s.chunkOf(ctx, items, idx, start, levels, true)
	if s.beforeWrite != nil {
		s.beforeWrite()
	}
	for attempt := 1; len(together) > 0; attempt++ {
		rev, err := s.commitChunk(ctx, items, together, reads)
		if err == nil {
			batchTxns.WithLabelValues("committed").Inc()
			for _, i := range together {
				it := &items[i]
				traceSubmit(ctx, it.Job, start)
				it.Job, it.Revision, it.Result = withRevision(it.Job, rev), rev, Created
				observeSubmit(start, Created, nil)
			}
			break
		}
		if !errors.Is(err, store.ErrConflict) {
			for _, i := range together {
				items[i].Job, items[i].Err = nil, err
				observeSubmit(start, "", err)
			}
			break
		}
		var next, more []int
		var now map[string]queueRead
		if attempt < maxAttempts {
			next, more, now = s.chunkOf(ctx, items, together, start, levels, false)
		}
		if !moved(reads, now) { // a name taken meanwhile, or the tries used up
			batchTxns.WithLabelValues("split").Inc()
			alone = append(together, alone...) // each gets its own answer
			break
		}
		batchTxns.WithLabelValues("queue_moved").Inc()
		together, reads = next, now
		alone = append(alone, more...)
	}
	for _, i := range alone {
		it := &items[i]
		it.Job, it.Revision, it.Result, it.Err = s.put(ctx, it.Job, hashes[i], owner, start, levels)
		observeSubmit(start, it.Result, it.Err)
	}
}

// chunkOf sorts the admitted items idx into those that can be stored
// together (a name once, a queue that exists and is not being deleted) and
// those to store alone (put answers them), reading each queue again into
// levels (serializably or not), and refuses an item whose queue's
// pod-security level changed so that it now forbids it.
func (s *Service) chunkOf(ctx context.Context, items []BatchItem, idx []int, start time.Time, levels *levelMemo,
	serializable bool) (together, alone []int, reads map[string]queueRead) {
	names := make(map[string]bool, len(idx))
	reads = map[string]queueRead{}
	changed := map[string]bool{}
	for _, i := range idx {
		j := items[i].Job
		if names[j.Name] {
			alone = append(alone, i) // after the first of its name is stored
			continue
		}
		qr, ok := reads[j.Spec.Queue]
		if !ok {
			var err error
			var ch bool
			qr, ch, err = s.refresh(ctx, j.Spec.Queue, levels, serializable)
			if err != nil {
				alone = append(alone, i) // put answers with the same error
				continue
			}
			reads[j.Spec.Queue], changed[j.Spec.Queue] = qr, ch
		}
		if qr.q == nil || qr.q.DeletionTimestamp != nil {
			alone = append(alone, i) // put refuses it for its queue
			continue
		}
		if changed[j.Spec.Queue] {
			if fe := podSecurityErrsAt(j, qr.level, qr.from); len(fe) > 0 {
				items[i].Job, items[i].Err = nil, v1alpha1.NewInvalidError(v1alpha1.KindJob, j.Name, fe)
				observeSubmit(start, "", items[i].Err)
				continue
			}
		}
		names[j.Name] = true
		together = append(together, i)
	}
	return together, alone, reads
}

// commitChunk stores the jobs of items idx in one transaction, guarded on
// each queue's revision as read and on each name's absence.
func (s *Service) commitChunk(ctx context.Context, items []BatchItem, idx []int, reads map[string]queueRead) (int64, error) {
	txn := s.store.Txn(ctx)
	for q, qr := range reads {
		if qr.q != nil {
			txn.If(s.queues.RevIs(q, qr.rev))
		}
	}
	for _, i := range idx {
		j := items[i].Job
		txn.If(s.jobs.Absent(j.Name)).Then(s.jobs.PutOp(j.Name, j))
	}
	return txn.Commit()
}

// moved says whether a queue read before (reads) is at another revision
// in a later read (now): a chunk's transaction that failed for it can be
// tried again. A queue now lacks (its read failed) counts as unmoved; a
// queue deleted since reads at revision 0, as moved.
func moved(reads, now map[string]queueRead) bool {
	for name, qr := range reads {
		if n, ok := now[name]; ok && n.rev != qr.rev {
			return true
		}
	}
	return false
}
