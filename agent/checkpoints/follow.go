// SPDX-License-Identifier: Apache-2.0

package checkpoints

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent/hubclient"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// MaxLineBytes bounds a log line (without the kubelet's timestamp); a
// longer line is skipped, and counted invalid if it has the checkpoint
// prefix.
const MaxLineBytes = 64 << 10

// timestampBytes is room for the kubelet's timestamp and its space.
const timestampBytes = 64

// maxLoggedLine bounds the part of a line that is logged.
const maxLoggedLine = 256

// position is how far a follower read a container's log: the kubelet
// timestamp of the last line read and how many lines read carried it. A
// reconnect asks for the log since that second and skips what it read.
type position struct {
	last time.Time
	same int
	// skip is how many lines stamped last a reconnect still re-reads.
	skip int
}

// since is the SinceTime to reopen the log at (nil: from the start).
func (p *position) since() *metav1.Time {
	if p.last.IsZero() {
		return nil
	}
	t := metav1.NewTime(p.last)
	return &t
}

// resume starts reading a reopened stream.
func (p *position) resume() { p.skip = p.same }

// fresh records a line stamped ts and reports whether it was not read
// before.
func (p *position) fresh(ts time.Time) bool {
	switch {
	case p.last.IsZero() || ts.After(p.last):
		p.last, p.same, p.skip = ts, 1, 0
		return true
	case ts.Before(p.last):
		return false
	case p.skip > 0:
		p.skip--
		return false
	default:
		p.same++
		return true
	}
}

// cutTimestamp splits the kubelet's timestamp off a line; ok is false for
// a line without one.
func cutTimestamp(line string) (ts time.Time, rest string, ok bool) {
	stamp, rest, found := strings.Cut(line, " ")
	if !found {
		return ts, line, false
	}
	ts, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		return ts, line, false
	}
	return ts, rest, true
}

// follow reads the log of s until ctx ends, reopening it with backoff
// whenever its stream ends, until a stream ends without an error once
// stopping is closed (its container stopped: the log was read to its end).
func (r *Reader) follow(ctx context.Context, s stream, stopping <-chan struct{}) {
	log := klog.FromContext(ctx).WithValues("pod", klog.KRef(s.namespace, s.pod), "job", s.job, "epoch", s.epoch)
	ctx = klog.NewContext(ctx, log)
	log.V(1).Info("Following member 0's log for checkpoints", "container", s.container)
	defer log.V(1).Info("Stopped following member 0's log")
	var pos position
	bo := r.reconnect
	for {
		rc, err := r.open(ctx, s.namespace, s.pod, s.container, pos.since())
		if err == nil {
			pos.resume()
			var n int
			n, err = r.read(ctx, s, rc, &pos)
			_ = rc.Close()
			if n > 0 {
				bo.Reset()
			}
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil && closed(stopping) {
			return
		}
		wait := bo.Next()
		if err != nil {
			log.V(1).Info("Reading member 0's log failed; reopening", "err", err, "after", wait)
		} else {
			log.V(2).Info("Member 0's log stream ended; reopening", "after", wait)
		}
		if !hubclient.Sleep(ctx, wait) {
			return
		}
	}
}

// read handles the lines of one stream until it ends; it returns how many
// lines it had not read before. A line counts once its newline arrived: a
// stream cut inside a line reads it again, whole, on reconnect.
func (r *Reader) read(ctx context.Context, s stream, rc io.ReadCloser, pos *position) (int, error) {
	stop := context.AfterFunc(ctx, func() { _ = rc.Close() }) // unblocks a read
	defer stop()
	br := bufio.NewReaderSize(rc, MaxLineBytes+timestampBytes)
	n, skipping := 0, false
	for {
		b, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if !skipping && r.tooLong(ctx, string(b), pos) {
				n++
			}
			skipping = true
			continue
		case err != nil:
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return n, nil
			}
			return n, err
		case skipping: // the end of a line too long
			skipping = false
		default:
			if r.line(ctx, s, string(b), pos) {
				n++
			}
		}
	}
}

// tooLong handles the start of a line longer than MaxLineBytes; it
// reports whether the line was not read before.
func (r *Reader) tooLong(ctx context.Context, start string, pos *position) bool {
	ts, rest, stamped := cutTimestamp(start)
	if stamped && !pos.fresh(ts) {
		return false
	}
	log := klog.FromContext(ctx)
	if strings.HasPrefix(rest, v1alpha1.CheckpointLinePrefix) {
		metricLines.WithLabelValues(resultInvalid).Inc()
		log.Info("Ignoring a checkpoint line longer than the limit", "limit", MaxLineBytes, "line", clip(rest))
		return true
	}
	log.V(4).Info("Skipping a log line longer than the limit", "limit", MaxLineBytes)
	return true
}

// line handles one line; it reports whether it was not read before.
func (r *Reader) line(ctx context.Context, s stream, line string, pos *position) bool {
	line = strings.TrimRight(line, "\r\n")
	ts, rest, stamped := cutTimestamp(line)
	if stamped && !pos.fresh(ts) {
		return false
	}
	rep, ok, err := v1alpha1.ParseCheckpointLine(rest)
	if !ok {
		return true
	}
	if err == nil {
		err = rep.Validate(s.job, time.Now())
	}
	if err != nil {
		metricLines.WithLabelValues(resultInvalid).Inc()
		klog.FromContext(ctx).Info("Ignoring an invalid checkpoint line", "err", err, "line", clip(rest))
		return true
	}
	r.report(ctx, s.job, rep)
	return true
}

// report sends rep to the hub, retrying with backoff while the hub is
// unavailable, at most r.attempts times.
func (r *Reader) report(ctx context.Context, job string, rep v1alpha1.CheckpointReport) {
	log := klog.FromContext(ctx).WithValues("step", rep.Step, "uri", rep.URI)
	attempts, err := hubclient.Resend(ctx, r.attempts, r.timeout, r.retry, func(ctx context.Context) error {
		return r.reporter.ReportJobCheckpoint(ctx, job, rep)
	}, func(err error, attempt int, wait time.Duration) {
		log.V(1).Info("Reporting the checkpoint failed; retrying", "err", err, "attempt", attempt, "after", wait)
	})
	switch {
	case err == nil:
		metricLines.WithLabelValues(resultReported).Inc()
		log.V(1).Info("Reported a checkpoint to the hub")
	case refused(err):
		metricLines.WithLabelValues(resultRefused).Inc()
		log.V(1).Info("The hub refused the checkpoint", "reason", status.Code(err).String(), "err", err)
	case ctx.Err() != nil: // the pod stopped or the agent stops
	default:
		metricLines.WithLabelValues(resultError).Inc()
		log.Error(err, "Could not report the checkpoint to the hub; giving up", "attempts", attempts)
	}
}

// refused reports whether the hub refused a report for good: an older step
// (or the same with another URI), an invalid report, an unknown job, a job
// not placed on this cluster.
func refused(err error) bool {
	switch status.Code(err) {
	case codes.FailedPrecondition, codes.InvalidArgument, codes.NotFound, codes.PermissionDenied:
		return true
	}
	return false
}

// clip shortens a line for the log.
func clip(s string) string {
	if len(s) <= maxLoggedLine {
		return s
	}
	i := maxLoggedLine
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
