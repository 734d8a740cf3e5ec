// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// errStrings renders errs as "path: Type" pairs for comparison.
func errStrings(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Field+": "+e.Type.String())
	}
	return out
}

func TestValidateJob(t *testing.T) {
	tests := []struct {
		name string
		job  *Job
		want []string
	}{
		{"valid", newJob("llama").obj(), nil},
		{"zero members and gpus, all listed", newJob("a").members(0).gpus(0).obj(), []string{
			"spec.gang.members: Invalid value", "spec.gang.gpusPerMember: Invalid value"}},
		{"bad names", newJob("Bad_Name").with(func(j *Job) {
			j.Spec.Queue = "Research//x/y"
			j.Namespace = "default"
		}).obj(), []string{"metadata.name: Invalid value", "metadata.namespace: Forbidden",
			"spec.queue: Invalid value"}},
		{"bad labels and annotations", newJob("a").with(func(j *Job) {
			j.Labels = map[string]string{"bad key!": "v"}
			j.Annotations = map[string]string{"-x": "v"}
		}).obj(), []string{"metadata.labels: Invalid value", "metadata.annotations: Invalid value"}},
		{"gang too large", newJob("a").members(MaxGangMembers + 1).gpus(MaxGPUsPerMember + 1).obj(), []string{
			"spec.gang.members: Invalid value", "spec.gang.gpusPerMember: Invalid value"}},
		{"missing name and queue", newJob("").with(func(j *Job) { j.Spec.Queue = "" }).obj(),
			[]string{"metadata.name: Required value", "spec.queue: Required value"}},
		{"wrong kind and version", newJob("a").with(func(j *Job) {
			j.APIVersion, j.Kind = "batch/v1", "Queue"
		}).obj(), []string{"apiVersion: Unsupported value", "kind: Unsupported value"}},
		{"unknown priority, policy, level, cluster loss", newJob("a").with(func(j *Job) {
			j.Spec.PriorityClass = "urgent"
			j.Spec.Placement.Policy = "Random"
			j.Spec.Placement.Topology.Required = "row"
			j.Spec.FailurePolicy.OnClusterLoss = "Retry"
		}).obj(), []string{"spec.priorityClass: Unsupported value", "spec.placement.topology.required: Unsupported value",
			"spec.placement.policy: Unsupported value", "spec.failurePolicy.onClusterLoss: Unsupported value"}},
		{"unknown run policy", newJob("a").with(func(j *Job) { j.Spec.RunPolicy = "ExactlyOnce" }).obj(),
			[]string{"spec.runPolicy: Unsupported value"}},
		{"preferred wider than required", newJob("a").with(func(j *Job) {
			j.Spec.Placement.Topology = Topology{Required: TopologyNVLink, Preferred: TopologyRack}
		}).obj(), []string{"spec.placement.topology.preferred: Invalid value"}},
		{"required topology with several clusters", newJob("a").members(4).with(func(j *Job) {
			j.Spec.Placement.MaxClusters = 2
			j.Spec.Placement.Topology.Required = TopologyRack
		}).obj(), []string{"spec.placement.maxClusters: Invalid value"}},
		{"more clusters than members", newJob("a").members(2).with(func(j *Job) { j.Spec.Placement.MaxClusters = 3 }).obj(),
			[]string{"spec.placement.maxClusters: Invalid value"}},
		{"bad selector and duplicate product", newJob("a").with(func(j *Job) {
			j.Spec.Placement.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}
			j.Spec.Placement.GPUProducts = []string{"NVIDIA-H100", "NVIDIA-H100"}
		}).obj(), []string{"spec.placement.clusterSelector.matchLabels: Invalid value", "spec.placement.gpuProducts[1]: Duplicate value"}},
		{"negative restarts and grace", newJob("a").with(func(j *Job) {
			j.Spec.FailurePolicy.MaxRestarts = ptr[int32](-1)
			j.Spec.Preemption.GracePeriodSeconds = ptr[int64](-5)
		}).obj(), []string{"spec.failurePolicy.maxRestarts: Invalid value", "spec.preemption.gracePeriodSeconds: Invalid value"}},
		{"negative TTL after finished", newJob("a").with(func(j *Job) { j.Spec.TTLSecondsAfterFinished = ptr[int32](-1) }).obj(),
			[]string{"spec.ttlSecondsAfterFinished: Invalid value"}},
		{"no containers", newJob("a").with(func(j *Job) { j.Spec.Template.Spec.Containers = nil }).obj(),
			[]string{"spec.template.spec.containers: Required value"}},
		{"nodeName set and GPU limit mismatch", newJob("a").gpus(8).gpuLimit(4).with(func(j *Job) {
			j.Spec.Template.Spec.NodeName = "n1"
		}).obj(), []string{"spec.template.spec.nodeName: Forbidden", "spec.template.spec.containers: Invalid value"}},
		{"the pod chooses its node", newJob("a").with(func(j *Job) {
			j.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "a"}
			j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{},
				PodAntiAffinity: &corev1.PodAntiAffinity{}}
			j.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1}}
		}).obj(), []string{"spec.template.spec.nodeSelector: Forbidden", "spec.template.spec.affinity.nodeAffinity: Forbidden",
			"spec.template.spec.affinity.podAntiAffinity: Forbidden", "spec.template.spec.topologySpreadConstraints: Forbidden"}},
		{"MIG and GPUs both", newJob("a").gpus(1).with(func(j *Job) {
			j.Spec.Gang.MIG = &MIGRequest{Profile: "big", PerMember: -1}
		}).obj(), []string{"spec.gang.gpusPerMember: Forbidden", "spec.gang.mig.profile: Invalid value",
			"spec.gang.mig.perMember: Invalid value"}},
		{"MIG gang asking for whole GPUs", newJob("a").gpus(0).gpuLimit(1).with(func(j *Job) {
			j.Spec.Gang.MIG = &MIGRequest{Profile: "1g.10gb", PerMember: 1}
		}).obj(), []string{"spec.template.spec.containers: Forbidden"}},
		{"rendezvous port and processes out of range", newJob("a").with(func(j *Job) {
			j.Spec.Rendezvous = Rendezvous{Port: 65536, ProcessesPerMember: -1}
		}).obj(), []string{"spec.rendezvous.port: Invalid value", "spec.rendezvous.processesPerMember: Invalid value"}},
		{"negative port, too many processes", newJob("a").with(func(j *Job) {
			j.Spec.Rendezvous = Rendezvous{Port: -1, ProcessesPerMember: MaxProcessesPerMember + 1}
		}).obj(), []string{"spec.rendezvous.port: Invalid value", "spec.rendezvous.processesPerMember: Invalid value"}},
		{"extreme valid rendezvous", newJob("a").with(func(j *Job) {
			j.Spec.Rendezvous = Rendezvous{Port: 65535, ProcessesPerMember: MaxProcessesPerMember}
		}).obj(), nil},
		{"template sets reserved env names", newJob("a").with(func(j *Job) {
			j.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "FOO", Value: "x"},
				{Name: EnvMasterAddr, Value: "me"}}
			j.Spec.Template.Spec.Containers = append(j.Spec.Template.Spec.Containers,
				corev1.Container{Name: "side", Image: "x", Env: []corev1.EnvVar{{Name: EnvPETNNodes, Value: "3"}}})
		}).obj(), []string{"spec.template.spec.containers[0].env[1].name: Forbidden",
			"spec.template.spec.containers[1].env[0].name: Forbidden"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := errStrings(ValidateJob(tc.job))
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestValidateJobMessage(t *testing.T) {
	errs := ValidateJob(newJob("a").members(0).obj())
	if len(errs) != 1 || errs[0].Error() != "spec.gang.members: Invalid value: 0: must be at least 1" {
		t.Fatalf("got %v", errs)
	}
	err := NewInvalidError(KindJob, "a", errs)
	if err.Error() != `Job "a" is invalid: spec.gang.members: Invalid value: 0: must be at least 1` {
		t.Errorf("InvalidError = %q", err)
	}
	if NewInvalidError(KindJob, "a", nil) != nil {
		t.Error("no errors must give a nil error")
	}
}

func TestValidateQueue(t *testing.T) {
	q := func(name string, f func(*Queue)) *Queue {
		x := &Queue{}
		x.Name = name
		if f != nil {
			f(x)
		}
		return x
	}
	tests := []struct {
		name  string
		queue *Queue
		want  []string
	}{
		{"top level", q("research", nil), nil},
		{"three levels with quotas", q("research/nlp/llama", func(x *Queue) {
			x.Spec.Weight = ptr[int32](2)
			x.Spec.Quotas = map[string]GPUQuota{"h100": {Nominal: 64, BorrowingLimit: ptr[int32](0)}, "mig-1g.10gb": {Nominal: 7}}
		}), nil},
		{"four levels", q("a/b/c/d", nil), []string{"metadata.name: Invalid value"}},
		{"empty and bad segments", q("a//B_", nil), []string{"metadata.name: Invalid value", "metadata.name: Invalid value"}},
		{"bad weight and quotas", q("a", func(x *Queue) {
			x.Spec.Weight = ptr[int32](0)
			x.Spec.Quotas = map[string]GPUQuota{"H100!": {Nominal: -1, BorrowingLimit: ptr[int32](-2)}}
		}), []string{"spec.weight: Invalid value", "spec.quotas[H100!]: Invalid value",
			"spec.quotas[H100!].nominal: Invalid value", "spec.quotas[H100!].borrowingLimit: Invalid value"}},
		{"unknown GPU classes", q("a", func(x *Queue) {
			x.Spec.Quotas = map[string]GPUQuota{"h1000": {Nominal: 8}, "mig-7x": {Nominal: 1}, "a100": {Nominal: 8}}
		}), []string{"spec.quotas[h1000]: Unsupported value", "spec.quotas[mig-7x]: Unsupported value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := errStrings(ValidateQueue(tc.queue))
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestQueueAncestors(t *testing.T) {
	if got := QueueAncestors("a/b/c"); !slices.Equal(got, []string{"a", "a/b"}) {
		t.Errorf("ancestors = %v", got)
	}
	if p, ok := QueueParent("a/b/c"); !ok || p != "a/b" {
		t.Errorf("parent = %q %v", p, ok)
	}
	if _, ok := QueueParent("a"); ok {
		t.Error("top-level queue has a parent")
	}
}
