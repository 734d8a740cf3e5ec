// SPDX-License-Identifier: Apache-2.0

package v1alpha1

// PodSecurityLevel is a Pod Security Standards level
// (https://kubernetes.io/docs/concepts/security/pod-security-standards/):
// what the members of a queue's jobs may ask of the node they run on.
type PodSecurityLevel string

// The Pod Security Standards levels, most permissive first.
const (
	// PodSecurityPrivileged allows everything: privileged containers,
	// hostPath volumes, host namespaces.
	PodSecurityPrivileged PodSecurityLevel = "privileged"
	// PodSecurityBaseline forbids the known privilege escalations
	// (privileged, hostPath, hostNetwork/PID/IPC, host ports, added
	// capabilities beyond the default set); plain containers pass.
	PodSecurityBaseline PodSecurityLevel = "baseline"
	// PodSecurityRestricted is baseline plus the hardening best practices:
	// runAsNonRoot, no privilege escalation, all capabilities dropped, a
	// RuntimeDefault or Localhost seccomp profile, restricted volume types.
	PodSecurityRestricted PodSecurityLevel = "restricted"
)

// DefaultPodSecurityLevel is the effective level of a queue when neither it
// nor any ancestor sets spec.podSecurity: plain containers keep working,
// privileged, hostPath and host-namespace members are refused.
const DefaultPodSecurityLevel = PodSecurityBaseline

// PodSecurityLevels lists the valid levels, most permissive first.
func PodSecurityLevels() []string {
	return []string{string(PodSecurityPrivileged), string(PodSecurityBaseline), string(PodSecurityRestricted)}
}

// strictness orders the levels; an unknown level counts as the strictest.
func (l PodSecurityLevel) strictness() int {
	switch l {
	case PodSecurityPrivileged:
		return 0
	case PodSecurityBaseline:
		return 1
	default:
		return 2
	}
}

// Valid reports whether l is one of the three levels.
func (l PodSecurityLevel) Valid() bool {
	return l == PodSecurityPrivileged || l == PodSecurityBaseline || l == PodSecurityRestricted
}

// StricterThan reports whether l forbids more than o.
func (l PodSecurityLevel) StricterThan(o PodSecurityLevel) bool {
	return l.strictness() > o.strictness()
}

// EffectivePodSecurity is the level that applies to the jobs of a queue:
// the strictest level set along the queue's path (levels, root first, the
// queue's own last; an empty one is unset and inherits), or
// DefaultPodSecurityLevel when none is set. A child queue is therefore never
// more permissive than its parent. It also returns the index in levels of
// the queue that decided it (-1 for the default).
func EffectivePodSecurity(levels ...PodSecurityLevel) (PodSecurityLevel, int) {
	eff, from := DefaultPodSecurityLevel, -1
	for i, l := range levels {
		if l == "" {
			continue
		}
		if from < 0 || l.StricterThan(eff) {
			eff, from = l, i
		}
	}
	return eff, from
}
