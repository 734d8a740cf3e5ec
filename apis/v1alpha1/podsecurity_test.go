// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestEffectivePodSecurity(t *testing.T) {
	P, B, R := PodSecurityPrivileged, PodSecurityBaseline, PodSecurityRestricted
	tests := []struct {
		path []PodSecurityLevel
		want PodSecurityLevel
		from int
	}{
		{nil, DefaultPodSecurityLevel, -1},
		{[]PodSecurityLevel{"", ""}, DefaultPodSecurityLevel, -1},
		{[]PodSecurityLevel{P, ""}, P, 0},            // inherited
		{[]PodSecurityLevel{B, P}, B, 0},             // a child is never more permissive
		{[]PodSecurityLevel{P, "", R}, R, 2},         // a child may be stricter
		{[]PodSecurityLevel{R, B, P}, R, 0},          // the strictest along the path
		{[]PodSecurityLevel{"", P}, P, 1},            // set only on the queue itself
		{[]PodSecurityLevel{P, "bogus"}, "bogus", 1}, // unknown counts as strictest
	}
	for _, tt := range tests {
		if got, from := EffectivePodSecurity(tt.path...); got != tt.want || from != tt.from {
			t.Errorf("EffectivePodSecurity(%v) = %s, %d; want %s, %d", tt.path, got, from, tt.want, tt.from)
		}
	}
}

func TestLocalMemberNamespace(t *testing.T) {
	long := strings.Repeat("a", 63) + "/" + strings.Repeat("b", 63) + "/" + strings.Repeat("c", 63)
	seen := map[string]string{}
	for _, q := range []string{"a", "a/b", "a-b", "a/b/c", "a-b/c", "a/b-c", long, long[:len(long)-1] + "d"} {
		ns := LocalMemberNamespace(q)
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			t.Errorf("queue %q: namespace %q is not a DNS label: %v", q, ns, msgs)
		}
		if !strings.HasPrefix(ns, "shoal-q-") {
			t.Errorf("queue %q: namespace %q", q, ns)
		}
		if other, ok := seen[ns]; ok {
			t.Errorf("queues %q and %q share namespace %q", q, other, ns)
		}
		seen[ns] = q
		if LocalMemberNamespace(q) != ns {
			t.Errorf("queue %q: not stable", q)
		}
	}
	if ns := LocalMemberNamespace("research/nlp"); !strings.HasPrefix(ns, "shoal-q-research-nlp-") {
		t.Errorf("research/nlp: %q does not read as its queue", ns)
	}
}

func TestLocalNamespaceOf(t *testing.T) {
	if ns, ok := LocalNamespaceOf(map[string]string{AnnotationQueue: "a/b"}); !ok || ns != LocalMemberNamespace("a/b") {
		t.Errorf("a/b: %q %v", ns, ok)
	}
	for _, ann := range []map[string]string{nil, {AnnotationQueue: ""}, {AnnotationQueue: "../kube-system"}, {AnnotationQueue: "A/B"}} {
		if ns, ok := LocalNamespaceOf(ann); ok {
			t.Errorf("%v: namespace %q, want none", ann, ns)
		}
	}
	if l := PodSecurityOf(nil); l != DefaultPodSecurityLevel {
		t.Errorf("unset level: %s", l)
	}
	if l := PodSecurityOf(map[string]string{AnnotationPodSecurity: "root"}); l != PodSecurityRestricted {
		t.Errorf("invalid level: %s, want restricted", l)
	}
}

func TestValidateQueuePodSecurity(t *testing.T) {
	q := &Queue{}
	q.Name, q.Spec.PodSecurity = "a", "root"
	SetQueueDefaults(q)
	errs := ValidateQueue(q)
	if len(errs) != 1 || errs[0].Field != "spec.podSecurity" || !strings.Contains(errs[0].Error(), "restricted") {
		t.Errorf("errors %v, want spec.podSecurity not supported", errs)
	}
	q.Spec.PodSecurity = PodSecurityRestricted
	if errs := ValidateQueue(q); len(errs) != 0 {
		t.Errorf("restricted: %v", errs)
	}
}
