// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// SetInferenceServiceDefaults fills the unset fields of a service in
// place (docs/inference.md).
func SetInferenceServiceDefaults(s *InferenceService) {
	s.APIVersion, s.Kind = APIVersion, KindInferenceService
	sp := &s.Spec
	if sp.PriorityClass == "" {
		sp.PriorityClass = PriorityProduction
	}
	if sp.Members == 0 {
		sp.Members = 1
	}
	if sp.GPUsPerMember == 0 {
		sp.GPUsPerMember = 1
	}
	if sp.Port == 0 {
		sp.Port = DefaultServicePort
	}
	if sp.Replicas.Max == 0 {
		sp.Replicas.Max = max(sp.Replicas.Min, 1)
	}
	if sp.Placement.Spread == "" {
		sp.Placement.Spread = SpreadClusters
	}
	if a := sp.Autoscaling; a != nil {
		if a.ScaleDownDelaySeconds == 0 {
			a.ScaleDownDelaySeconds = DefaultScaleDownDelaySeconds
		}
		if m := a.Metric; m != nil && m.Path == "" {
			m.Path = DefaultServiceMetricPath
		}
	}
	if sp.Rollout.MaxSurge == 0 {
		sp.Rollout.MaxSurge = DefaultServiceMaxSurge
	}
	if sp.Rollout.ProgressDeadlineSeconds == 0 {
		sp.Rollout.ProgressDeadlineSeconds = DefaultProgressDeadlineSeconds
	}
}

// metricNameRE is a Prometheus metric name.
var metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]{0,199}$`)

// serviceEnv are the variables Shoal sets on every replica container.
var serviceEnv = sets.New(EnvModel, EnvModelURI, EnvModelDigest, EnvService)

// ValidateInferenceService checks a defaulted service: its own fields, then
// the replica job it makes (ReplicaJob), so that every replica it will
// ever create is a valid Job. Field paths are the service's.
func ValidateInferenceService(s *InferenceService) error {
	errs := validateTypeMeta(s.TypeMeta, KindInferenceService)
	errs = append(errs, validateObjectMeta(&s.ObjectMeta, ValidateInferenceServiceName)...)
	p := field.NewPath("spec")
	sp := &s.Spec
	errs = append(errs, ValidateQueueName(sp.Queue, p.Child("queue"))...)
	if _, _, err := ParseModelVersionName(sp.Model); err != nil {
		errs = append(errs, field.Invalid(p.Child("model"), sp.Model, "must be MODEL@VERSION of a registered model version"))
	}
	r := sp.Replicas
	if r.Min < 0 || r.Min > maxServiceReplicas {
		errs = append(errs, field.Invalid(p.Child("replicas", "min"), r.Min, fmt.Sprintf("must be 0 to %d", maxServiceReplicas)))
	}
	if r.Max < max(r.Min, 1) || r.Max > maxServiceReplicas {
		errs = append(errs, field.Invalid(p.Child("replicas", "max"), r.Max, fmt.Sprintf("must be at least min and 1, at most %d", maxServiceReplicas)))
	}
	if r.Min == 0 && sp.Autoscaling == nil {
		errs = append(errs, field.Invalid(p.Child("replicas", "min"), r.Min, "0 (scale to zero) needs spec.autoscaling: nothing else would ever start a replica"))
	}
	if r.Max > r.Min && sp.Autoscaling == nil {
		errs = append(errs, field.Invalid(p.Child("replicas", "max"), r.Max, "above min needs spec.autoscaling: nothing else would scale past min"))
	}
	if sp.Members < 1 || sp.Members > MaxGangMembers {
		errs = append(errs, field.Invalid(p.Child("members"), sp.Members, fmt.Sprintf("must be 1 to %d", MaxGangMembers)))
	}
	if sp.GPUsPerMember < 1 {
		errs = append(errs, field.Invalid(p.Child("gpusPerMember"), sp.GPUsPerMember, "must be at least 1"))
	}
	if sp.Port < 1 || sp.Port > 65535 {
		errs = append(errs, field.Invalid(p.Child("port"), sp.Port, "must be a port, 1 to 65535"))
	}
	if v := sp.Placement.Spread; v != SpreadClusters && v != Pack {
		errs = append(errs, field.NotSupported(p.Child("placement", "spread"), v, []string{string(SpreadClusters), string(Pack)}))
	}
	if a := sp.Autoscaling; a != nil {
		ap := p.Child("autoscaling")
		if a.TargetPerReplica < 1 || a.TargetPerReplica > maxServiceTargetPerReplica {
			errs = append(errs, field.Invalid(ap.Child("targetPerReplica"), a.TargetPerReplica, "must be at least 1: the load one replica carries"))
		}
		if a.ScaleDownDelaySeconds < 0 || a.ScaleDownDelaySeconds > 86400 {
			errs = append(errs, field.Invalid(ap.Child("scaleDownDelaySeconds"), a.ScaleDownDelaySeconds, "must be 0 to 86400"))
		}
		if m := a.Metric; m != nil {
			mp := ap.Child("metric")
			if !metricNameRE.MatchString(m.Name) {
				errs = append(errs, field.Invalid(mp.Child("name"), m.Name, "must be a Prometheus metric name"))
			}
			if m.Port < 0 || m.Port > 65535 {
				errs = append(errs, field.Invalid(mp.Child("port"), m.Port, "must be a port, 1 to 65535, or 0 for spec.port"))
			}
			if !strings.HasPrefix(m.Path, "/") || len(m.Path) > 256 || strings.ContainsAny(m.Path, " \t\r\n?#") {
				errs = append(errs, field.Invalid(mp.Child("path"), m.Path, "must be an absolute URL path without query, e.g. /metrics"))
			}
		}
	}
	if sp.Rollout.MaxSurge < 1 || sp.Rollout.MaxSurge > maxServiceReplicas {
		errs = append(errs, field.Invalid(p.Child("rollout", "maxSurge"), sp.Rollout.MaxSurge, "must be at least 1: a rollout adds a new replica before it removes an old one"))
	}
	if d := sp.Rollout.ProgressDeadlineSeconds; d < 10 || d > 86400 {
		errs = append(errs, field.Invalid(p.Child("rollout", "progressDeadlineSeconds"), d, "must be 10 to 86400"))
	}
	for i, c := range sp.Template.Spec.Containers {
		for j, e := range c.Env {
			if serviceEnv.Has(e.Name) {
				errs = append(errs, field.Forbidden(p.Child("template", "spec", "containers").Index(i).Child("env").Index(j).Child("name"),
					fmt.Sprintf("%s is set by Shoal on every replica; reserved: %s", e.Name, strings.Join(sets.List(serviceEnv), ", "))))
			}
		}
	}
	if len(errs) == 0 {
		// Every replica is this job with another name and model: check it as one.
		j := ReplicaJob(s, &ModelVersion{Spec: ModelVersionSpec{ArtifactURI: "s3://check/model", Digest: "sha256:0"}}, s.Name+"-xxxxx")
		for _, e := range ValidateJob(j) {
			errs = append(errs, replicaError(e))
		}
	}
	return NewInvalidError(KindInferenceService, s.Name, errs)
}

// replicaError names a replica job's field error by the service field it
// comes from (template, placement, priority class and queue keep their
// paths; the gang's fields are the service's members and gpusPerMember).
func replicaError(e *field.Error) *field.Error {
	out := *e
	switch {
	case strings.HasPrefix(e.Field, "spec.gang.members"):
		out.Field = "spec.members"
	case strings.HasPrefix(e.Field, "spec.gang.gpusPerMember"):
		out.Field = "spec.gpusPerMember"
	case strings.HasPrefix(e.Field, "metadata.name"):
		out.Field = "metadata.name"
	}
	return &out
}

// ValidateInferenceServiceName checks a service name: a Job name short
// enough for "<name>-xxxxx", the names of its replicas.
func ValidateInferenceServiceName(name string, p *field.Path) field.ErrorList {
	if len(name) > MaxInferenceServiceNameLength {
		return field.ErrorList{field.TooLong(p, name, MaxInferenceServiceNameLength)}
	}
	return ValidateJobName(name, p)
}

// ReplicaJob is the Job of one replica of s serving mv, named name: a gang
// of s.Spec.Members members with the service's template, queue, priority
// and placement, at-least-once (a server may start again), restarted on
// failure and rescheduled on cluster loss, every container told its model
// (EnvModel, EnvModelURI, EnvModelDigest, EnvService). Defaults are set.
func ReplicaJob(s *InferenceService, mv *ModelVersion, name string) *Job {
	sp := &s.Spec
	model := sp.Model
	if mv.Spec.Model != "" {
		model = ModelVersionName(mv.Spec.Model, mv.Spec.Version)
	}
	t := *sp.Template.DeepCopy()
	env := []corev1.EnvVar{{Name: EnvService, Value: s.Name}, {Name: EnvModel, Value: model},
		{Name: EnvModelURI, Value: mv.Spec.ArtifactURI}, {Name: EnvModelDigest, Value: mv.Spec.Digest}}
	for i := range t.Spec.Containers {
		t.Spec.Containers[i].Env = append(append([]corev1.EnvVar(nil), t.Spec.Containers[i].Env...), env...)
	}
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[LabelInferenceService] = s.Name
	if a := sp.Autoscaling; a != nil && a.Metric != nil {
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		t.Annotations[AnnotationLoadMetric] = fmt.Sprintf("%d%s#%s", sp.ServiceMetricPort(), a.Metric.Path, a.Metric.Name)
	}
	maxClusters := int32(1)
	j := &Job{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{LabelInferenceService: s.Name},
			Annotations: map[string]string{AnnotationServedModel: model}},
		Spec: JobSpec{
			Queue:         sp.Queue,
			PriorityClass: sp.PriorityClass,
			Gang:          Gang{Members: sp.Members, GPUsPerMember: sp.GPUsPerMember},
			Placement: Placement{MaxClusters: maxClusters, ClusterSelector: sp.Placement.ClusterSelector.DeepCopy(),
				GPUProducts: append([]string(nil), sp.Placement.GPUProducts...), Topology: sp.Placement.Topology},
			RunPolicy:     AtLeastOnce,
			FailurePolicy: FailurePolicy{OnClusterLoss: Reschedule},
			Template:      t,
		},
	}
	SetJobDefaults(j)
	return j
}

// ServiceModelOf returns the model version a replica job serves.
func ServiceModelOf(j *Job) string { return j.Annotations[AnnotationServedModel] }
