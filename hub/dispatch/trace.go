// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/internal/tracing"
)

// phaseStarts remembers when this replica decided an epoch's prepare and
// commit (the stored decision times are to the second), for the spans that
// end later; a span whose start this replica did not see starts at the
// stored time.
var phaseStarts sync.Map

func phaseKey(job string, epoch int64, phase string) string {
	return job + "/" + strconv.FormatInt(epoch, 10) + "/" + phase
}

// phaseStart is the remembered start of phase, or the stored time of the
// job's current dispatch decision, or at.
func phaseStart(k string, disp *v1alpha1.DispatchStatus, at time.Time) time.Time {
	if v, ok := phaseStarts.Load(k); ok {
		return v.(time.Time)
	}
	if disp != nil && disp.Time != nil {
		return disp.Time.Time
	}
	return at
}

// traceAttrs are the span attributes of the pass's attempt.
func traceAttrs(s *scope, j *v1alpha1.Job) []attribute.KeyValue {
	return append(jobs.Attrs(j), tracing.KeyEpoch.Int64(s.res.Epoch), tracing.KeyClusters.StringSlice(s.res.Clusters),
		attribute.Int("shoal.members", len(s.res.Members)))
}

// traceStatus emits the spans the status this pass wrote ends: prepare at
// the commit, running and the attempt's root once every member runs, the
// root (failed) when the attempt is torn down before it ran. prev is the
// job the pass decided on.
func traceStatus(ctx context.Context, s *scope, prev *v1alpha1.Job) {
	if !tracing.Enabled() || prev == nil || s.res == nil {
		return
	}
	a, ok := tracing.AttemptOf(prev.Annotations)
	if !ok {
		return
	}
	attrs := traceAttrs(s, prev)
	prepare, commit := phaseKey(s.name, s.res.Epoch, tracing.PhasePrepare), phaseKey(s.name, s.res.Epoch, tracing.PhaseCommit)
	switch {
	case s.decision != nil:
		switch dec := s.decision.Dispatch; dec.Phase {
		case v1alpha1.DispatchPreparing:
			phaseStarts.Store(prepare, s.now)
		case v1alpha1.DispatchCommitted:
			a.EmitPhase(ctx, "", tracing.Span{Name: tracing.PhasePrepare, Start: phaseStart(prepare, prev.Status.Dispatch, s.now),
				End: s.now, Attrs: attrs})
			phaseStarts.Delete(prepare)
			phaseStarts.Store(commit, s.now)
		case v1alpha1.DispatchAborting, v1alpha1.DispatchFailing, v1alpha1.DispatchRestarting:
			forget(s.name, s.res.Epoch)
			if prev.Status.Phase != v1alpha1.JobRunning { // a running attempt's root has ended already
				msg := string(dec.Phase) + ": " + dec.Message
				if dec.Reason != "" {
					msg = string(dec.Phase) + " (" + dec.Reason + "): " + dec.Message
				}
				a.EmitRoot(ctx, tracing.Span{End: s.now, Attrs: attrs, Error: msg})
			}
		}
	case s.started:
		a.EmitPhase(ctx, "", tracing.Span{Name: tracing.PhaseRunning, Start: phaseStart(commit, prev.Status.Dispatch, s.now),
			End: s.now, Attrs: attrs})
		forget(s.name, s.res.Epoch)
		a.EmitRoot(ctx, tracing.Span{End: s.now, Attrs: attrs})
	}
}

// stamped marks, in phaseStarts, an epoch whose commit span was emitted.
const stamped = "stamped"

// traceCommit emits the commit span the first time a pass of this replica
// stamped the epoch's members (n of them): from the commit decision to now.
func traceCommit(ctx context.Context, s *scope, n int) {
	if !tracing.Enabled() || s.res == nil || s.job.Object == nil {
		return
	}
	j := s.job.Object
	a, ok := tracing.AttemptOf(j.Annotations)
	if !ok {
		return
	}
	// A pass whose member cache had not seen the stamps yet stamps again.
	if _, done := phaseStarts.LoadOrStore(phaseKey(s.name, s.res.Epoch, stamped), true); done {
		return
	}
	start := phaseStart(phaseKey(s.name, s.res.Epoch, tracing.PhaseCommit), j.Status.Dispatch, s.now)
	a.EmitPhase(ctx, "", tracing.Span{Name: tracing.PhaseCommit, Start: start, End: time.Now(),
		Attrs: append(traceAttrs(s, j), attribute.Int("shoal.stamped", n))})
}

// forget drops what phaseStarts holds of an epoch that ran or ended.
func forget(job string, epoch int64) {
	for _, p := range []string{tracing.PhasePrepare, tracing.PhaseCommit, stamped} {
		phaseStarts.Delete(phaseKey(job, epoch, p))
	}
}

// traceEnded ends the trace of an epoch this replica was dispatching when
// its job finished (cancelled) or went away before every member ran: the
// root, failed with the job's phase; and forgets the epoch.
func traceEnded(s *scope) {
	if s.res == nil {
		return
	}
	_, preparing := phaseStarts.Load(phaseKey(s.name, s.res.Epoch, tracing.PhasePrepare))
	_, committed := phaseStarts.Load(phaseKey(s.name, s.res.Epoch, tracing.PhaseCommit))
	forget(s.name, s.res.Epoch)
	j := s.job.Object
	if !preparing && !committed || j == nil || !tracing.Enabled() {
		return
	}
	if a, ok := tracing.AttemptOf(j.Annotations); ok {
		a.EmitRoot(context.Background(), tracing.Span{End: s.now, Attrs: traceAttrs(s, j),
			Error: "the job is " + string(j.Status.Phase) + " before every member ran"})
	}
}
