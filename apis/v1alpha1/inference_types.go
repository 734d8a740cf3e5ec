// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InferenceService serves one ModelVersion from replicas spread over the
// fleet's clusters (docs/inference.md). Each replica is a Job of the
// service's queue, a gang of Spec.Members members (member 0 the leader), so
// replicas are placed by the hub's scheduler under the queue's quota,
// priority and preemption like any job. The hub scales the replica count
// between Spec.Replicas.Min and Max on the load reported for the service,
// rolls a new Spec.Model out replica by replica with surge, and rolls back
// when new replicas do not become ready.
// +kubebuilder:object:root=true
type InferenceService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   InferenceServiceSpec   `json:"spec"`
	Status InferenceServiceStatus `json:"status,omitempty"`
}

// InferenceServiceSpec is what the user asks for.
type InferenceServiceSpec struct {
	// Queue is the leaf queue the replicas are charged to.
	Queue string `json:"queue"`
	// PriorityClass of the replicas; default production.
	PriorityClass PriorityClass `json:"priorityClass,omitempty"`
	// Model is the ModelVersion served, "<model>@<version>"; it must be
	// registered. Changing it starts a rollout.
	Model string `json:"model"`
	// Replicas bounds the replica count.
	Replicas ServiceReplicas `json:"replicas"`
	// Members is the number of members of each replica (a leader and
	// Members-1 workers, LeaderWorkerSet style); default 1.
	Members int32 `json:"members,omitempty"`
	// GPUsPerMember is the whole GPUs each member gets; default 1.
	GPUsPerMember int32 `json:"gpusPerMember,omitempty"`
	// Port is the port member 0 serves on (the endpoint list's port);
	// default 8000.
	Port int32 `json:"port,omitempty"`
	// Placement says where replicas may go and how they spread.
	Placement ServicePlacement `json:"placement,omitempty"`
	// Autoscaling scales the replicas on load; without it the service
	// keeps Replicas.Min replicas.
	Autoscaling *ServiceAutoscaling `json:"autoscaling,omitempty"`
	// Rollout bounds a model-version rollout.
	Rollout ServiceRollout `json:"rollout,omitempty"`
	// Template is the model server's pod template, used for every member.
	Template corev1.PodTemplateSpec `json:"template"`
}

// ServiceReplicas bounds a service's replica count.
type ServiceReplicas struct {
	// Min replicas kept (0 allows scale to zero; needs Autoscaling).
	Min int32 `json:"min"`
	// Max replicas; default Min.
	Max int32 `json:"max,omitempty"`
}

// ServiceSpreadPolicy says how a service's replicas are spread.
type ServiceSpreadPolicy string

// The spread policies.
const (
	// SpreadClusters places each new replica in the eligible cluster with
	// the fewest replicas of the service (for availability).
	SpreadClusters ServiceSpreadPolicy = "SpreadClusters"
	// Pack leaves the choice to the scheduler's own placement.
	Pack ServiceSpreadPolicy = "Pack"
)

// ServicePlacement is where a service's replicas may go.
type ServicePlacement struct {
	// Spread is SpreadClusters (default) or Pack.
	Spread ServiceSpreadPolicy `json:"spread,omitempty"`
	// ClusterSelector limits the clusters, as for a Job.
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// GPUProducts limits the GPU products, as for a Job.
	GPUProducts []string `json:"gpuProducts,omitempty"`
	// Topology of each replica's members, as for a Job.
	Topology Topology `json:"topology,omitempty"`
}

// ServiceAutoscaling scales replicas on load: the desired count is
// ceil(load / TargetPerReplica) within Replicas; a lower count is applied
// only after it held for ScaleDownDelaySeconds.
type ServiceAutoscaling struct {
	// TargetPerReplica is the load one replica should carry (requests in
	// flight, queue depth: whatever the reports count).
	TargetPerReplica int64 `json:"targetPerReplica"`
	// ScaleDownDelaySeconds is how long a lower desired count must hold
	// before replicas are removed; default 60.
	ScaleDownDelaySeconds int32 `json:"scaleDownDelaySeconds,omitempty"`
	// Metric, when set, is read by each cluster's agent from member 0 of
	// every ready replica there and reported as that cluster's load.
	Metric *ServiceMetric `json:"metric,omitempty"`
}

// ServiceMetric is a gauge a replica's member 0 exposes in the Prometheus
// text format.
type ServiceMetric struct {
	// Name of the gauge (summed over its series), e.g. shoal_requests_in_flight.
	Name string `json:"name"`
	// Port serving it; default the service's Port.
	Port int32 `json:"port,omitempty"`
	// Path serving it; default /metrics.
	Path string `json:"path,omitempty"`
}

// ServiceRollout bounds a rollout of a new model version.
type ServiceRollout struct {
	// MaxSurge is how many replicas of the new version may run above the
	// desired count while old ones still serve; default 1.
	MaxSurge int32 `json:"maxSurge,omitempty"`
	// ProgressDeadlineSeconds: a rollout with no new replica becoming
	// ready for this long, or with a new replica failed, is rolled back;
	// default 300.
	ProgressDeadlineSeconds int32 `json:"progressDeadlineSeconds,omitempty"`
}

// InferenceServiceStatus is what the hub observed and decided.
type InferenceServiceStatus struct {
	// Owner is the user who created the service; its replica jobs are
	// theirs.
	Owner string `json:"owner,omitempty"`
	// ObservedGeneration is the spec generation the controller acted on.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Model is the version the service serves as stable: the spec's
	// once a rollout completed, the previous one while it runs or after it
	// was rolled back.
	Model string `json:"model,omitempty"`
	// Revision is the stable replicas' revision: a hash of the replica job
	// (model, template, placement, size), so a change of any of them rolls out.
	Revision string `json:"revision,omitempty"`
	// DesiredReplicas is the count the controller aims at.
	DesiredReplicas int32 `json:"desiredReplicas"`
	// Replicas is the replica jobs not finished; ReadyReplicas those whose
	// every member is ready.
	Replicas      int32 `json:"replicas"`
	ReadyReplicas int32 `json:"readyReplicas"`
	// Load is the latest load reported, per source and summed.
	Load *ServiceLoad `json:"load,omitempty"`
	// LowSince is since when the load asked for fewer replicas than run
	// (scale-down delay).
	LowSince *metav1.Time `json:"lowSince,omitempty"`
	// LastScaleTime is when the desired count last changed.
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`
	// Rollout is the last rollout.
	Rollout *ServiceRolloutStatus `json:"rollout,omitempty"`
	// Endpoints are the replicas' member 0, for a router or gateway.
	Endpoints []ServiceEndpoint `json:"endpoints,omitempty"`
	// Conditions: Ready (at least Replicas.Min ready), Progressing (a
	// rollout runs), RolledBack.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ServiceLoad is the load reported for a service.
type ServiceLoad struct {
	// Value is the sum of the fresh sources' values.
	Value int64 `json:"value"`
	// Sources are the latest report of each source.
	Sources []ServiceLoadSource `json:"sources,omitempty"`
}

// ServiceLoadSource is one source's latest report.
type ServiceLoadSource struct {
	// Source is "user:<name>" (a gateway's report) or "agent:<cluster>".
	Source string `json:"source"`
	// Value reported.
	Value int64 `json:"value"`
	// Time of the report.
	Time metav1.Time `json:"time"`
}

// ServiceRolloutPhase is where a rollout stands.
type ServiceRolloutPhase string

// The rollout phases.
const (
	ServiceRolloutProgressing ServiceRolloutPhase = "Progressing"
	ServiceRolloutComplete    ServiceRolloutPhase = "Complete"
	ServiceRolloutRolledBack  ServiceRolloutPhase = "RolledBack"
)

// ServiceRolloutStatus is one rollout from a model version to another.
type ServiceRolloutStatus struct {
	// From and To are the model versions, Revision the target replica
	// revision.
	From     string              `json:"from,omitempty"`
	To       string              `json:"to"`
	Revision string              `json:"revision"`
	Phase    ServiceRolloutPhase `json:"phase"`
	// StartTime is when it began; ProgressTime when a new replica last
	// became ready (or StartTime).
	StartTime    *metav1.Time `json:"startTime,omitempty"`
	ProgressTime *metav1.Time `json:"progressTime,omitempty"`
	// Generation is the spec generation it rolls out.
	Generation int64  `json:"generation,omitempty"`
	Message    string `json:"message,omitempty"`
}

// ServiceEndpoint is one replica as a router sees it.
type ServiceEndpoint struct {
	// Replica is the replica's job name.
	Replica string `json:"replica"`
	// Revision of the replica.
	Revision string `json:"revision,omitempty"`
	// Model is the version it serves.
	Model string `json:"model"`
	// Cluster it runs in.
	Cluster string `json:"cluster,omitempty"`
	// Address of member 0 (pod IP) and the service's port.
	Address string `json:"address,omitempty"`
	Port    int32  `json:"port,omitempty"`
	// Ready: every member of the replica is ready.
	Ready bool `json:"ready"`
}

// Conditions of an InferenceService.
const (
	ServiceConditionReady       = "Ready"
	ServiceConditionProgressing = "Progressing"
	ServiceConditionRolledBack  = "RolledBack"
)

// Well-known names of inference replicas.
const (
	// LabelInferenceService names the service a replica job belongs to.
	LabelInferenceService = Prefix + "inference-service"
	// AnnotationServedModel is the model version a replica job serves.
	AnnotationServedModel = Prefix + "model"
	// AnnotationReplicaRevision is a replica job's revision (status.revision).
	AnnotationReplicaRevision = Prefix + "replica-revision"
	// AnnotationLoadMetric, on every member pod of a replica whose service
	// has spec.autoscaling.metric, tells the agent where to read the load:
	// "<port><path>#<gauge name>", e.g. "8000/metrics#shoal_requests_in_flight".
	// Member pods of replicas also carry LabelInferenceService.
	AnnotationLoadMetric = Prefix + "load-metric"
	// AnnotationSpreadPin is the cluster a replica was pinned to for spread.
	AnnotationSpreadPin = Prefix + "spread-pin"
	// EnvModel, EnvModelURI and EnvModelDigest tell every container of a
	// replica which version it serves; EnvService names the service.
	EnvModel       = "SHOAL_MODEL"
	EnvModelURI    = "SHOAL_MODEL_URI"
	EnvModelDigest = "SHOAL_MODEL_DIGEST"
	EnvService     = "SHOAL_SERVICE"
	// LabelClusterName is every cluster's own name as a label, for cluster
	// selectors (the hub adds it; a cluster's own label of that key is
	// overridden).
	LabelClusterName = Prefix + "cluster-name"
)

// Defaults of an InferenceService.
const (
	DefaultServicePort                   = 8000
	DefaultScaleDownDelaySeconds         = 60
	DefaultProgressDeadlineSeconds       = 300
	DefaultServiceMaxSurge               = 1
	DefaultServiceMetricPath             = "/metrics"
	replicaSuffixLength                  = 6 // "-" and 5 characters
	MaxInferenceServiceNameLength        = MaxJobNameLength - replicaSuffixLength
	maxServiceReplicas                   = 1000
	maxServiceTargetPerReplica     int64 = 1 << 40
)

// ServiceMetricPort is the port the agent reads the metric on.
func (s *InferenceServiceSpec) ServiceMetricPort() int32 {
	if m := s.Autoscaling; m != nil && m.Metric != nil && m.Metric.Port != 0 {
		return m.Metric.Port
	}
	return s.Port
}
