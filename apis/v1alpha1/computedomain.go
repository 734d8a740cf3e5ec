// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MemberComputeDomain is what a member's hub pod tells its agent about the
// compute domain of its gang (AnnotationComputeDomain, JSON).
type MemberComputeDomain struct {
	// Nodes are the distinct target nodes of the epoch's members in the
	// member's cluster, sorted: the agent counts those in the member's
	// NVLink clique as the ComputeDomain's numNodes.
	Nodes []string `json:"nodes"`
}

// MemberComputeDomainOf reads a member pod's compute-domain request from
// its annotations; ok is false when it has none, err says why one it has
// cannot be used.
func MemberComputeDomainOf(annotations map[string]string) (d MemberComputeDomain, ok bool, err error) {
	raw := annotations[AnnotationComputeDomain]
	if raw == "" {
		return d, false, nil
	}
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return d, true, fmt.Errorf("annotation %s: %w", AnnotationComputeDomain, err)
	}
	if len(d.Nodes) == 0 {
		return d, true, fmt.Errorf("annotation %s: names no node", AnnotationComputeDomain)
	}
	return d, true, nil
}

// ComputeDomainClaim names the pod claim by which a member's local pod
// uses its compute domain's channel (spec.resourceClaims and the first
// container's resources.claims).
const ComputeDomainClaim = "shoal-compute-domain"

// ComputeDomainName is the name of the ComputeDomain of one NVLink clique
// of a job's gang slice, for one epoch: deterministic, so that a member's
// local pod can name its channel template before the domain exists, and
// new with every epoch. The clique (<clusterUUID>.<cliqueId>) enters as a
// short hash, which keeps the name a DNS-1123 label.
func ComputeDomainName(job string, epoch int64, clique string) string {
	h := sha256.Sum256([]byte(clique))
	return fmt.Sprintf("%s-e%d-cd-%s", job, epoch, hex.EncodeToString(h[:5]))
}

// ComputeDomainChannelTemplate is the name of the ResourceClaimTemplate of
// a ComputeDomain's IMEX channel (spec.channel.resourceClaimTemplate.name),
// which the domain's controller creates and member pods reference.
func ComputeDomainChannelTemplate(domain string) string { return domain + "-channel" }

// validateComputeDomain refuses a compute domain with MIG slices or GPU
// shares: a domain's members hold whole GPUs of their NVLink clique.
func validateComputeDomain(g *Gang, p *field.Path) field.ErrorList {
	if !g.ComputeDomain {
		return nil
	}
	var errs field.ErrorList
	if g.MIG != nil {
		errs = append(errs, field.Forbidden(p, "set either mig or computeDomain, not both: a compute domain's members hold whole GPUs"))
	}
	if g.Shared != nil {
		errs = append(errs, field.Forbidden(p, "set either shared or computeDomain, not both: a compute domain's members hold whole GPUs"))
	}
	return errs
}
