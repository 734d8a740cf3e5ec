// SPDX-License-Identifier: Apache-2.0

package hubcluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func TestValidCluster(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"eu1", true}, {"a-b", true}, {"", false}, {"EU1", false}, {"a_b", false}, {strings.Repeat("x", 60), false},
	}
	for _, tt := range tests {
		err := validCluster(tt.name)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidCluster)) {
			t.Errorf("validCluster(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestPolicyNamesTheCluster(t *testing.T) {
	p := policy("eu1")
	if *p.Name != "shoal-agent-eu1" || *p.Spec.MatchConditions[0].Expression != `request.userInfo.username == "system:serviceaccount:shoal-system:shoal-agent-eu1"` {
		t.Errorf("policy = %s, match %s", *p.Name, *p.Spec.MatchConditions[0].Expression)
	}
	for _, v := range p.Spec.Validations {
		if !strings.Contains(*v.Expression, `"shoal-eu1-"`) {
			t.Errorf("validation does not name the node prefix: %s", *v.Expression)
		}
	}
	nodes := *p.Spec.Validations[0].Expression
	if want := `object.metadata.labels["` + v1alpha1.LabelCluster + `"] == "eu1"`; !strings.Contains(nodes, want) {
		t.Errorf("node validation does not match the cluster label (%s): %s", want, nodes)
	}
	if msg, want := *p.Spec.Validations[0].Message, "label "+v1alpha1.LabelCluster+"=eu1"; !strings.Contains(msg, want) {
		t.Errorf("node validation message %q does not say %q", msg, want)
	}
	if b := policyBinding("eu1"); *b.Spec.PolicyName != *p.Name {
		t.Errorf("binding names %s", *b.Spec.PolicyName)
	}
}

func TestCheckName(t *testing.T) {
	tests := []struct {
		name       string
		registered []string
		want       error
	}{
		{"eu1", []string{"us1", "eu2"}, nil},
		{"a", []string{"a-b"}, ErrAmbiguousName},
		{"a-b", []string{"a"}, ErrAmbiguousName},
		{"ab", []string{"a"}, nil},
		{"eu1", []string{"eu1"}, nil},
		{"Bad", nil, ErrInvalidCluster},
	}
	for _, tt := range tests {
		if err := CheckName(tt.name, tt.registered); !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("CheckName(%q, %v) = %v, want %v", tt.name, tt.registered, err, tt.want)
		}
	}
}
