// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MemberDevices is what a member's hub pod tells its agent about the DRA
// devices the member asks for (AnnotationDevices, JSON): the job's
// spec.gang.devices and the count per member (spec.gang.gpusPerMember).
type MemberDevices struct {
	DeviceRequest `json:",inline"`
	// Count is the number of devices the member's claim asks for.
	Count int32 `json:"count"`
}

// MemberDevicesOf reads a member pod's DRA device request from its
// annotations (AnnotationDevices); ok is false when it has none, err says
// why one it has cannot be used.
func MemberDevicesOf(annotations map[string]string) (d MemberDevices, ok bool, err error) {
	raw := annotations[AnnotationDevices]
	if raw == "" {
		return d, false, nil
	}
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return d, true, fmt.Errorf("annotation %s: %w", AnnotationDevices, err)
	}
	if d.Count < 1 || d.DeviceClassName == "" {
		return d, true, fmt.Errorf("annotation %s: needs a deviceClassName and a count of at least 1", AnnotationDevices)
	}
	return d, true, nil
}

// MemberClaimRequest names the request in a member's local ResourceClaim
// and the claim in its pod's spec.resourceClaims (and the first
// container's resources.claims).
const MemberClaimRequest = "shoal-gpus"

// MemberClaimName is the name of the local ResourceClaim of the member
// whose local pod is named pod; the claim is owned by that pod.
func MemberClaimName(pod string) string { return pod + "-gpus" }

// validateDevices checks a gang's DRA device request as far as the API
// types can: the class name and that every selector has a CEL expression.
// The hub compiles the expressions at submit (federation/devicesel).
func validateDevices(d *DeviceRequest, mig bool, p *field.Path) field.ErrorList {
	if d == nil {
		return nil
	}
	var errs field.ErrorList
	if mig {
		errs = append(errs, field.Forbidden(p, "set either mig or devices, not both: devices are whole GPUs"))
	}
	cp := p.Child("deviceClassName")
	if d.DeviceClassName == "" {
		errs = append(errs, field.Required(cp, "the DeviceClass of the member clusters, e.g. gpu.nvidia.com"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(d.DeviceClassName) {
			errs = append(errs, field.Invalid(cp, d.DeviceClassName, msg))
		}
	}
	for i, s := range d.Selectors {
		sp := p.Child("selectors").Index(i)
		if s.CEL == nil || s.CEL.Expression == "" {
			errs = append(errs, field.Required(sp.Child("cel", "expression"), "a CEL selector over device, e.g. "+
				fmt.Sprintf("%q", `device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"`)))
		}
	}
	return errs
}

// SlicePodGroupName is the name of the PodGroup (scheduling.k8s.io) of a
// job's gang slice in one member cluster, for one epoch: a restart is a
// new slice with a new group.
func SlicePodGroupName(job string, epoch int64) string { return fmt.Sprintf("%s-e%d", job, epoch) }
