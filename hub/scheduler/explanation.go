// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"strings"
	"unique"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
)

// explained reports whether the job's stored explanation (Placed=False)
// already says why as far as meaning goes, so that nothing is written: the
// same reason and the same message once its counts are masked
// (meaningOf). "needs 32×8 GPUs; 120 are free on matching nodes" and
// "...; 118 are free..." mean the same; another reason, or another
// blocking domain ("the largest free rack has 12×8 (eu1/rack:r7)" against
// "(eu1/rack:r9)"), does not. The counts in a stored message are as of
// its last change in meaning (status.placement.time). The meaning is
// explanationKey's, as a cycle compares it (pendingForm.explains).
func explained(j *v1alpha1.Job, why *placement.Unschedulable) bool {
	c := meta.FindStatusCondition(j.Status.Conditions, v1alpha1.JobConditionPlaced)
	if c == nil || c.Status != metav1.ConditionFalse {
		return false
	}
	return c.Reason == string(why.Reason) && c.Message == why.Message ||
		explanationKey(c.Reason, c.Message) == explanationKey(string(why.Reason), why.Message)
}

// explanationKey is what a waiting job's explanation means: its reason
// and its message's meaningOf, interned (unique.Make), so that two equal
// meanings compare by pointer.
func explanationKey(reason, message string) unique.Handle[string] {
	return unique.Make(reason + "\x00" + meaningOf(message))
}

// meaningMemo memoizes explanationKey for one cycle (thousands of waiting
// jobs share a few explanations). The last explanation asked is answered
// without a lookup: the engine gives the gangs of one class the same
// explanation (one pointer), and hashing a message of a hundred bytes for
// each of 35,000 waiting gangs was a tenth of a cycle's CPU.
type meaningMemo struct {
	by      map[[2]string]unique.Handle[string]
	last    *placement.Unschedulable
	lastKey unique.Handle[string]
}

func (m *meaningMemo) of(why *placement.Unschedulable) unique.Handle[string] {
	if m.last != nil && why == m.last {
		return m.lastKey
	}
	k := [2]string{string(why.Reason), why.Message}
	v, ok := m.by[k]
	if !ok {
		v = explanationKey(k[0], k[1])
		if m.by == nil {
			m.by = map[[2]string]unique.Handle[string]{}
		}
		m.by[k] = v
	}
	m.last, m.lastKey = why, v
	return v
}

// meaningOf masks the counts of an explanation: every number standing as
// a word of its own (between spaces, punctuation, "×" or "%") becomes "#".
// Digits that are part of a name (a cluster "h100-1", a domain
// "rack:r07", a product "A100-SXM4-80GB", a queue "team2") stay, so a
// different blocking resource is a different meaning. A gang's own shape
// ("32×8 GPUs") is masked too; it changes only with the job's spec, which
// is fixed once submitted.
func meaningOf(msg string) string {
	var b strings.Builder
	b.Grow(len(msg))
	for i := 0; i < len(msg); {
		if !isDigit(msg[i]) {
			b.WriteByte(msg[i])
			i++
			continue
		}
		j := i
		for j < len(msg) && isDigit(msg[j]) {
			j++
		}
		if bounds(msg, i-1) && bounds(msg, j) {
			b.WriteByte('#')
		} else {
			b.WriteString(msg[i:j])
		}
		i = j
	}
	return b.String()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// bounds reports whether msg[i] ends a count on that side: the start or end
// of the message, a space, or punctuation that does not join names.
func bounds(msg string, i int) bool {
	if i < 0 || i >= len(msg) {
		return true
	}
	switch c := msg[i]; {
	case c == ' ', c == '(', c == ')', c == ',', c == ';', c == '%', c == '+', c == '=':
		return true
	case c >= 0x80: // a byte of "×" (U+00D7)
		return strings.HasPrefix(msg[i:], "×") || (i > 0 && strings.HasPrefix(msg[i-1:], "×"))
	}
	return false
}
