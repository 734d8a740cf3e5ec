package hubcluster

import (
	"errors"
	"strings"
	"testing"
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
	if b := policyBinding("eu1"); *b.Spec.PolicyName != *p.Name {
		t.Errorf("binding names %s", *b.Spec.PolicyName)
	}
}
