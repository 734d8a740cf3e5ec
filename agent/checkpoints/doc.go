// SPDX-License-Identifier: Apache-2.0

// Package checkpoints passes on to the hub the checkpoints a job's member 0
// prints on its standard output (v1alpha1.CheckpointLinePrefix, one JSON
// report per line):
//
//	SHOAL_CHECKPOINT {"step":1200,"uri":"s3://ckpt/run-7/step-1200"}
//
// The Reader watches, through the shared agent/cluster cache, the managed
// local member pods labelled with a job and member index 0. While such a pod
// runs (phase Running and its first container running) one goroutine
// follows that container's log; it stops when the pod goes away or stops
// running, and a new container (a restart) is followed afresh. Every line
// with the prefix is parsed and sent to the hub (Clusters.ReportJobCheckpoint)
// in the order printed, with bounded retries while the hub is unavailable;
// refusals (an older step, an invalid report, an unknown job) are logged
// and not retried. The hub keeps only the latest checkpoint and treats the
// latest reported again as a no-op, so a line read twice does no harm.
//
// The log is read with kubelet timestamps (PodLogOptions.Timestamps): when
// the stream ends while the container still runs, the Reader reconnects
// with backoff, asks for the log since the timestamp of the last line read
// (SinceTime, whole seconds) and skips the lines it has already read by
// their timestamps, so no line is reported twice and none is lost. Lines
// longer than MaxLineBytes are skipped.
//
// The metric shoal_agent_checkpoint_lines_total counts the checkpoint lines
// by result (docs/metrics.md).
package checkpoints
