// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"errors"
	"io"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

// streamDepth is how many received batches of a SubmitStream wait while
// the one before them is judged and stored: the next batch is at hand
// when a batch is done, and a stream holds at most streamDepth+2 batches
// (with the one being judged and the one being received).
const streamDepth = 2

// SubmitStream judges each batch of the stream as SubmitBatch judges one
// (submitBatch), one after the other, and answers each with its results,
// in order, while the next batches are received (batchReader). The stream
// ends when the client has closed its side and every batch is answered,
// or with the first error that concerns no single job: an empty or
// over-size batch, a broken or cancelled stream. Each batch's audit
// entries are written once it is judged.
func (s *jobsServer) SubmitStream(stream shoalv1.Jobs_SubmitStreamServer) error {
	ctx := stream.Context()
	p, err := principal(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := readBatches(ctx, stream)
	log := batchAuditFrom(ctx)
	for req := range r.batches {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := checkBatchSize(len(req.GetJobs())); err != nil {
			return err
		}
		resp := s.submitBatch(ctx, shoalv1.Jobs_SubmitStream_FullMethodName, p, req)
		log.flush()
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
	if r.err != nil {
		return r.err
	}
	return ctx.Err()
}

// batchReader receives a stream's requests ahead of its handler.
type batchReader struct {
	// batches holds up to streamDepth requests; it is closed when the
	// client has closed its side, when receiving fails or when the
	// handler's context ends.
	batches chan *shoalv1.SubmitJobBatchRequest
	// err is why receiving failed (nil: the client closed its side, or the
	// context ended); read it once batches is closed.
	err error
}

// readBatches starts receiving the stream's requests. Its goroutine ends
// with the stream: a Recv it waits in returns when the client cancels or
// when gRPC ends the stream after the handler has returned.
func readBatches(ctx context.Context, stream shoalv1.Jobs_SubmitStreamServer) *batchReader {
	r := &batchReader{batches: make(chan *shoalv1.SubmitJobBatchRequest, streamDepth)}
	go func() {
		defer close(r.batches)
		for {
			req, err := stream.Recv()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					r.err = err
				}
				return
			}
			select {
			case r.batches <- req:
			case <-ctx.Done():
				return
			}
		}
	}()
	return r
}
