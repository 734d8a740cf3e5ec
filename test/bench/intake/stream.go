// SPDX-License-Identifier: Apache-2.0

package intake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

// streamWindow is how many messages a client's stream sends ahead of the
// answers (about what the hub reads ahead of the batch it stores).
const streamWindow = 4

// sentBatch is a message of a stream waiting for its answer.
type sentBatch struct {
	lo, hi int
	at     time.Time
}

// submitStream submits the jobs it claims over one SubmitStream, a batch
// per message, up to streamWindow messages ahead of the answers, until
// none are left or a batch fails; it returns how many the hub accepted
// and the latency of each message (from its send to its answer).
func submitStream(ctx context.Context, cl shoalv1.JobsClient, opts Options, claim claimFunc) (int, []time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := cl.SubmitStream(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("open a SubmitStream: %w", err)
	}
	sent := make(chan sentBatch, streamWindow)
	sendDone := make(chan struct{})
	var sendErr error
	go func() {
		defer close(sendDone)
		defer close(sent)
		sendErr = sendBatches(ctx, stream, opts, claim, sent)
	}()
	defer func() { cancel(); <-sendDone }()
	accepted := 0
	var lat []time.Duration
	for b := range sent {
		resp, err := stream.Recv()
		if err != nil {
			return accepted, lat, fmt.Errorf("stream batch %s-%d..%d: %w", opts.Prefix, b.lo, b.hi-1, err)
		}
		lat = append(lat, time.Since(b.at))
		k, err := acceptedOf(opts, resp, b.lo, b.hi)
		accepted += k
		if err != nil {
			return accepted, lat, err
		}
	}
	<-sendDone
	if sendErr != nil {
		return accepted, lat, fmt.Errorf("stream: send: %w", sendErr)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		return accepted, lat, fmt.Errorf("stream: end: %v, want its end (EOF)", err)
	}
	return accepted, lat, nil
}

// sendBatches sends the batches it claims, each noted in sent (which
// blocks once streamWindow wait for their answers), then closes the
// client's side.
func sendBatches(ctx context.Context, stream shoalv1.Jobs_SubmitStreamClient, opts Options, claim claimFunc, sent chan<- sentBatch) error {
	for {
		lo, hi, ok := claim()
		if !ok {
			return stream.CloseSend()
		}
		req := batch(opts, lo, hi)
		select {
		case sent <- sentBatch{lo: lo, hi: hi, at: time.Now()}:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := stream.Send(req); err != nil {
			return err
		}
	}
}
