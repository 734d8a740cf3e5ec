// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// AnnotationPrepared, "True" on a gang member's local pod, says the agent
// prepared the member before it created the pod (the member fits its
// target node, its epoch is recorded): a create cannot set a status
// condition, and the annotation stands for PodConditionPrepared True
// (PreparedCondition), so that the prepare costs no write of its own.
const AnnotationPrepared = Prefix + "prepared"

// ReasonFits is the reason of a PodConditionPrepared True: the member fits
// its target node.
const ReasonFits = "Fits"

// PreparedCondition returns the PodConditionPrepared of a member's local
// pod: its status condition, or, for a pod created prepared
// (AnnotationPrepared "True"), the condition that annotation stands for,
// True with reason ReasonFits since the pod's creation. nil: not prepared
// yet. The returned condition must not be modified.
func PreparedCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == PodConditionPrepared {
			return &p.Status.Conditions[i]
		}
	}
	if p.Annotations[AnnotationPrepared] != string(corev1.ConditionTrue) {
		return nil
	}
	return &corev1.PodCondition{Type: PodConditionPrepared, Status: corev1.ConditionTrue, Reason: ReasonFits,
		LastTransitionTime: p.CreationTimestamp}
}

// PodConditionPreparedMembers is the pod condition by which an agent
// reports, on one hub pod of a job's epoch in its cluster (the report's
// carrier), the members of that epoch there that it prepared and holds
// until the commit: True, reason ReasonHeld, message the members' indices
// (FormatMembers). The hub counts a member named by a report on a hub pod
// of the same job, epoch and cluster as Prepared unless its own hub pod
// says otherwise (a Prepared False, a phase), so that a gang's prepare
// costs a status write per cluster rather than one per member. An agent
// rewrites its report as members join it; the member's own Prepared
// condition reaches its hub pod with its next status (Running, a failure).
const PodConditionPreparedMembers = Prefix + "PreparedMembers"

// ReasonHeld is the reason of a PodConditionPreparedMembers True: the
// members named are prepared and held until the commit.
const ReasonHeld = "Held"

// FormatMembers writes member indices as sorted, comma-separated ranges
// ("0-63,65"); the indices need not be sorted or distinct.
func FormatMembers(indices []int32) string {
	s := slices.Clone(indices)
	slices.Sort(s)
	s = slices.Compact(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(int64(s[i]), 10))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.FormatInt(int64(s[j]), 10))
		}
		i = j + 1
	}
	return b.String()
}

// ParseMembers reads what FormatMembers writes and calls yield with each
// index; it stops and returns an error at the first malformed range (the
// indices before it were yielded). A range may name at most maxMembers
// indices, so that a malformed report cannot make the reader loop long.
func ParseMembers(s string, maxMembers int, yield func(int32)) error {
	if s == "" {
		return nil
	}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseInt(lo, 10, 32)
		if err != nil || a < 0 {
			return fmt.Errorf("member range %q: not an index", part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseInt(hi, 10, 32); err != nil || b < a {
				return fmt.Errorf("member range %q: not a range", part)
			}
		}
		if b-a >= int64(maxMembers) {
			return fmt.Errorf("member range %q: more than %d members", part, maxMembers)
		}
		for i := a; i <= b; i++ {
			yield(int32(i))
		}
	}
	return nil
}

// PreparedMembersReport returns the message of a hub pod's
// PodConditionPreparedMembers True ("" when it has none).
func PreparedMembersReport(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == PodConditionPreparedMembers && c.Status == corev1.ConditionTrue {
			return c.Message
		}
	}
	return ""
}
