// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds that catch typos before the scheduler sees them.
const (
	// MaxGangMembers is the largest gang.
	MaxGangMembers = 100000
	// MaxGPUsPerMember is the most whole GPUs one member (a pod on one node) may ask for.
	MaxGPUsPerMember = 64
	// MaxSharesPerMember is the most shares of shared GPUs one member may
	// ask for (the NVIDIA device plugin allows many replicas per GPU).
	MaxSharesPerMember = 256
)

// migProfile matches MIG profiles such as 1g.10gb or 3g.40gb.
var migProfile = regexp.MustCompile(`^[1-9][0-9]*g\.[1-9][0-9]*gb$`)

// ValidateJob returns every problem of a Job, each with its field path.
// Fields that have defaults may be left unset. The pod template gets only
// the checks Shoal itself needs; the hub also runs it through the
// Kubernetes validator.
func ValidateJob(j *Job) field.ErrorList {
	errs := validateTypeMeta(j.TypeMeta, KindJob)
	errs = append(errs, validateObjectMeta(&j.ObjectMeta, ValidateJobName)...)
	return append(errs, validateJobSpec(&j.Spec, field.NewPath("spec"))...)
}

func validateJobSpec(s *JobSpec, p *field.Path) field.ErrorList {
	errs := ValidateQueueName(s.Queue, p.Child("queue"))
	if _, ok := s.PriorityClass.Value(); s.PriorityClass != "" && !ok {
		errs = append(errs, field.NotSupported(p.Child("priorityClass"), s.PriorityClass, PriorityClasses()))
	}
	if len(s.Roles) > 0 {
		errs = append(errs, validateRoles(s, p)...)
		if s.Gang.ComputeDomain {
			errs = append(errs, field.Forbidden(p.Child("gang", "computeDomain"),
				"a job with roles cannot ask for a compute domain yet: use spec.gang without roles"))
		}
	} else {
		errs = append(errs, validateGang(&s.Gang, p.Child("gang"))...)
	}
	errs = append(errs, validatePlacement(&s.Placement, gpuMembers(s), p.Child("placement"))...)
	errs = append(errs, validateFailurePolicy(&s.FailurePolicy, p.Child("failurePolicy"))...)
	if s.RunPolicy != "" && s.RunPolicy != AtMostOnce && s.RunPolicy != AtLeastOnce {
		errs = append(errs, field.NotSupported(p.Child("runPolicy"), s.RunPolicy, []RunPolicy{AtMostOnce, AtLeastOnce}))
	}
	errs = append(errs, validatePreemption(&s.Preemption, p.Child("preemption"))...)
	errs = append(errs, validateRendezvous(&s.Rendezvous, p.Child("rendezvous"))...)
	if t := s.TTLSecondsAfterFinished; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(p.Child("ttlSecondsAfterFinished"), *t, "must not be negative"))
	}
	if len(s.Roles) > 0 {
		for i := range s.Roles {
			r := &s.Roles[i]
			name, n := r.Resource()
			errs = append(errs, validateTemplate(&r.Template, name, n, r.MIG != nil || r.Shared != nil,
				p.Child("roles").Index(i).Child("template"))...)
		}
		return errs
	}
	name, n := s.Gang.Resource()
	if s.Gang.Devices != nil {
		errs = append(errs, validateDeviceTemplate(&s.Template, p.Child("template"))...)
		name = "" // the claim, not a limit, carries the GPUs: no limit to compare
	}
	return append(errs, validateTemplate(&s.Template, name, n, s.Gang.MIG != nil || s.Gang.Shared != nil, p.Child("template"))...)
}

// validateDeviceTemplate refuses what a template of a gang asking for DRA
// devices must not hold: GPU or MIG limits (the member's ResourceClaim
// carries its GPUs) and claims of its own.
func validateDeviceTemplate(t *corev1.PodTemplateSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	sp := p.Child("spec")
	if res := templateAccelerators(t); len(res) > 0 {
		errs = append(errs, field.Forbidden(sp.Child("containers"), fmt.Sprintf(
			"a gang asking for devices (spec.gang.devices) must not ask for %v: its members get their GPUs "+
				"through a ResourceClaim of spec.gang.gpusPerMember devices; leave these limits out", res)))
	}
	if len(t.Spec.ResourceClaims) > 0 {
		errs = append(errs, field.Forbidden(sp.Child("resourceClaims"),
			"the agent adds each member's claim (spec.gang.devices); claims of the template would not be placed by the hub"))
	}
	return errs
}

func validateGang(g *Gang, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if g.Members < 1 {
		errs = append(errs, field.Invalid(p.Child("members"), g.Members, "must be at least 1"))
	} else if g.Members > MaxGangMembers {
		errs = append(errs, field.Invalid(p.Child("members"), g.Members, fmt.Sprintf("must be at most %d", MaxGangMembers)))
	}
	switch {
	case g.MIG != nil && g.GPUsPerMember != 0:
		errs = append(errs, field.Forbidden(p.Child("gpusPerMember"), "set either gpusPerMember or mig, not both"))
	case g.Shared != nil && g.GPUsPerMember != 0:
		errs = append(errs, field.Forbidden(p.Child("gpusPerMember"), "set either gpusPerMember or shared, not both"))
	case g.MIG == nil && g.Shared == nil && g.GPUsPerMember < 1:
		errs = append(errs, field.Invalid(p.Child("gpusPerMember"), g.GPUsPerMember,
			"must be at least 1 (or ask for MIG slices with spec.gang.mig, GPU shares with spec.gang.shared)"))
	case g.GPUsPerMember > MaxGPUsPerMember:
		errs = append(errs, field.Invalid(p.Child("gpusPerMember"), g.GPUsPerMember, fmt.Sprintf(
			"must be at most %d: a member is one pod on one node; use more members for more GPUs", MaxGPUsPerMember)))
	}
	errs = append(errs, validateDevices(g.Devices, g.MIG != nil, p.Child("devices"))...)
	if g.Devices != nil && g.Shared != nil {
		errs = append(errs, field.Forbidden(p.Child("devices"), "set either shared or devices, not both: devices are whole GPUs"))
	}
	errs = append(errs, validateShared(g.Shared, g.MIG != nil, p.Child("shared"))...)
	errs = append(errs, validateComputeDomain(g, p.Child("computeDomain"))...)
	return append(errs, validateMIG(g.MIG, p.Child("mig"))...)
}

// validateShared checks a request for shares of shared GPUs; mig says the
// same gang or role asks for MIG slices too.
func validateShared(sh *SharedGPURequest, mig bool, sp *field.Path) field.ErrorList {
	if sh == nil {
		return nil
	}
	var errs field.ErrorList
	if mig {
		errs = append(errs, field.Forbidden(sp, "set either mig or shared, not both"))
	}
	if sh.PerMember < 0 || sh.PerMember > MaxSharesPerMember {
		errs = append(errs, field.Invalid(sp.Child("perMember"), sh.PerMember,
			fmt.Sprintf("must be 1 to %d (0: the default, 1)", MaxSharesPerMember)))
	}
	if sh.Strategy != "" && sh.Strategy != SharingTimeSlicing && sh.Strategy != SharingMPS {
		errs = append(errs, field.NotSupported(sp.Child("strategy"), sh.Strategy, []SharingStrategy{SharingTimeSlicing, SharingMPS}))
	}
	return errs
}

func validateMIG(m *MIGRequest, mp *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	if !migProfile.MatchString(m.Profile) {
		errs = append(errs, field.Invalid(mp.Child("profile"), m.Profile,
			"must be a MIG profile such as 1g.10gb or 3g.40gb"))
	}
	if m.PerMember < 0 {
		errs = append(errs, field.Invalid(mp.Child("perMember"), m.PerMember, "must be at least 1"))
	}
	return errs
}

func validatePlacement(pl *Placement, members int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	mc := p.Child("maxClusters")
	switch {
	case pl.MaxClusters < 0:
		errs = append(errs, field.Invalid(mc, pl.MaxClusters, "must be at least 1"))
	case members > 0 && pl.MaxClusters > members:
		errs = append(errs, field.Invalid(mc, pl.MaxClusters,
			fmt.Sprintf("must not exceed the members that ask for GPUs (%d, spec.gang.members or the GPU roles)", members)))
	case pl.MaxClusters > 1 && pl.Topology.Required != "":
		errs = append(errs, field.Invalid(mc, pl.MaxClusters,
			"a required topology level keeps the gang inside one cluster: use maxClusters 1 or drop topology.required"))
	}
	if pl.ClusterSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(pl.ClusterSelector,
			metav1validation.LabelSelectorValidationOptions{}, p.Child("clusterSelector"))...)
	}
	seen := sets.New[string]()
	for i, prod := range pl.GPUProducts {
		ip := p.Child("gpuProducts").Index(i)
		for _, msg := range validation.IsValidLabelValue(prod) {
			errs = append(errs, field.Invalid(ip, prod, msg))
		}
		if prod == "" {
			errs = append(errs, field.Required(ip, "a GPU product such as NVIDIA-H100-80GB-HBM3"))
		} else if seen.Has(prod) {
			errs = append(errs, field.Duplicate(ip, prod))
		}
		seen.Insert(prod)
	}
	errs = append(errs, validateTopology(pl.Topology, p.Child("topology"))...)
	if pl.Policy != "" && pl.Policy != BinPack && pl.Policy != Spread {
		errs = append(errs, field.NotSupported(p.Child("policy"), pl.Policy, []PlacementPolicy{BinPack, Spread}))
	}
	return errs
}

func validateTopology(t Topology, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Required != "" && t.Required.Rank() < 0 {
		errs = append(errs, field.NotSupported(p.Child("required"), t.Required, TopologyLevels))
	}
	if t.Preferred != "" && t.Preferred.Rank() < 0 {
		errs = append(errs, field.NotSupported(p.Child("preferred"), t.Preferred, TopologyLevels))
	}
	if t.Required.Rank() >= 0 && t.Preferred.Rank() >= 0 && t.Preferred.Rank() >= t.Required.Rank() {
		errs = append(errs, field.Invalid(p.Child("preferred"), t.Preferred,
			fmt.Sprintf("must be a narrower level than required (%s); levels from narrow to wide: %v",
				t.Required, TopologyLevels)))
	}
	return errs
}

func validateFailurePolicy(f *FailurePolicy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.MaxRestarts != nil && *f.MaxRestarts < 0 {
		errs = append(errs, field.Invalid(p.Child("maxRestarts"), *f.MaxRestarts, "must not be negative"))
	}
	if f.OnClusterLoss != "" && f.OnClusterLoss != Reschedule && f.OnClusterLoss != Fail {
		errs = append(errs, field.NotSupported(p.Child("onClusterLoss"), f.OnClusterLoss,
			[]ClusterLossAction{Reschedule, Fail}))
	}
	return errs
}

func validatePreemption(pr *Preemption, p *field.Path) field.ErrorList {
	if g := pr.GracePeriodSeconds; g != nil && *g < 0 {
		return field.ErrorList{field.Invalid(p.Child("gracePeriodSeconds"), *g, "must not be negative")}
	}
	return nil
}

// validateTemplate checks what Shoal relies on: containers exist, the hub
// does the binding, and the containers ask for the members' accelerators
// (n of resource name per member; a MIG or shared-GPU request when mig).
func validateTemplate(t *corev1.PodTemplateSpec, name corev1.ResourceName, n int32, mig bool, p *field.Path) field.ErrorList {
	sp := p.Child("spec")
	var errs field.ErrorList
	if len(t.Spec.Containers) == 0 {
		return append(errs, field.Required(sp.Child("containers"), "a member pod needs at least one container"))
	}
	if t.Spec.NodeName != "" {
		errs = append(errs, field.Forbidden(sp.Child("nodeName"), "the hub places members; leave nodeName empty"))
	}
	if n > 0 || mig {
		errs = append(errs, validateNodeChoice(&t.Spec, sp)...)
	}
	if got := TemplateResource(t, name); name != "" && n > 0 && got != 0 && got != int64(n) {
		errs = append(errs, field.Invalid(sp.Child("containers"), got, fmt.Sprintf(
			"the containers' %s limits add up to %d but the gang asks for %d per member; "+
				"make them equal or leave the limits out", name, got, n)))
	}
	if n == 0 {
		if res := templateAccelerators(t); len(res) > 0 {
			errs = append(errs, field.Forbidden(sp.Child("containers"), fmt.Sprintf(
				"a CPU-only role must not ask for %v: the scheduler would not count them; set the role's gpusPerMember or mig", res)))
		}
	}
	if mig && TemplateResource(t, ResourceGPU) > 0 {
		errs = append(errs, field.Forbidden(sp.Child("containers"),
			fmt.Sprintf("a MIG or shared-GPU gang must not ask for %s", ResourceGPU)))
	}
	errs = append(errs, validateResumeReserved(&t.Spec, sp)...)
	return append(errs, validateReservedEnv(t.Spec.Containers, sp.Child("containers"))...)
}

// templateAccelerators lists the GPU and MIG resources the template's
// containers ask for, sorted.
func templateAccelerators(t *corev1.PodTemplateSpec) []string {
	seen := map[string]bool{}
	for _, c := range t.Spec.Containers {
		for _, rl := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			for name, q := range rl {
				if (name == ResourceGPU || name == ResourceGPUShared || strings.HasPrefix(string(name), migResourcePrefix)) && !q.IsZero() {
					seen[string(name)] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// placedByHub is what the Forbidden errors of validateNodeChoice say: the
// hub chooses each member's node, and the member's pod is pinned to it.
const placedByHub = "the hub chooses every member's node and pins the member's pod to it, so this constraint would not be " +
	"taken into account when the node is chosen; choose nodes with spec.placement (gpuProducts, clusterSelector, " +
	"clusters, topology) and tolerations"

// validateNodeChoice refuses the pod-spec fields by which a pod chooses its
// node. The hub's placement does not read them (it matches products,
// cluster labels, taints and topology), and the workload cluster's scheduler
// sees a pod already pinned to the node the hub chose: a node selector or a
// required affinity that node does not meet would leave the member Pending
// until its start deadline, a preferred one would do nothing. Refused at
// submit rather than stored and ignored. Members of CPU-only roles are not
// pinned (the workload cluster's scheduler chooses their node), so their
// templates keep these fields.
func validateNodeChoice(s *corev1.PodSpec, sp *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.NodeSelector) > 0 {
		errs = append(errs, field.Forbidden(sp.Child("nodeSelector"), placedByHub))
	}
	if a := s.Affinity; a != nil {
		ap := sp.Child("affinity")
		if a.NodeAffinity != nil {
			errs = append(errs, field.Forbidden(ap.Child("nodeAffinity"), placedByHub))
		}
		if a.PodAffinity != nil {
			errs = append(errs, field.Forbidden(ap.Child("podAffinity"), placedByHub+
				"; members of one gang are kept close by spec.placement.topology"))
		}
		if a.PodAntiAffinity != nil {
			errs = append(errs, field.Forbidden(ap.Child("podAntiAffinity"), placedByHub))
		}
	}
	if len(s.TopologySpreadConstraints) > 0 {
		errs = append(errs, field.Forbidden(sp.Child("topologySpreadConstraints"), placedByHub))
	}
	return errs
}
