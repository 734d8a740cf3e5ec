// SPDX-License-Identifier: Apache-2.0

// Package serviceload passes on to the hub the load of the inference
// services that have replicas in the agent's cluster, for their
// autoscaling (spec.autoscaling.metric, apis/v1alpha1.ServiceMetric).
//
// Every member pod of a replica whose service names a metric carries the
// label v1alpha1.LabelInferenceService and the annotation
// v1alpha1.AnnotationLoadMetric, "<port><path>#<gauge>", e.g.
// "8000/metrics#shoal_requests_in_flight". Every interval (DefaultInterval)
// the Reader takes, from the shared agent/cluster cache, the managed local
// member 0 pods of replicas that run and are Ready, reads
// http://<pod IP>:<port><path> (DefaultReadTimeout, at most
// DefaultMaxPageBytes) in the Prometheus text format, sums every sample of
// the gauge (a counter or untyped metric of that name counts too; NaN
// samples are skipped, an infinite one fails the read) and adds it to its
// service's total. A pod that cannot be read counts as nothing and is
// logged at V(2).
//
// Each service with at least one pod read is reported to the hub
// (Clusters.ReportServiceLoad) with its total rounded up, never negative;
// the hub keeps the latest per cluster for a minute. A service whose pods
// could all not be read is not reported that round, so the hub's value
// ages out instead of dropping to zero. A service reported before that has
// no such pod left is reported 0 once, so that the hub sees the drop at
// once. Reports are retried with backoff while the hub is unavailable; a
// refusal (NotFound: the service is gone; PermissionDenied: it has no
// replica on this cluster, e.g. the replica moved) is logged at V(2) and
// not retried.
//
// The metric shoal_agent_service_load_reads_total counts the reads by
// result (docs/metrics.md).
package serviceload
