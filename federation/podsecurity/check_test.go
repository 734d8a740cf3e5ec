// SPDX-License-Identifier: Apache-2.0

package podsecurity

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func spec(mut func(*corev1.PodSpec)) *corev1.PodSpec {
	s := &corev1.PodSpec{InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
		Containers: []corev1.Container{{Name: "a", Image: "busybox"}, {Name: "b", Image: "busybox"}}}
	if mut != nil {
		mut(s)
	}
	return s
}

func TestCheck(t *testing.T) {
	var fourEach []string
	for _, p := range []string{"spec.initContainers[0]", "spec.containers[0]", "spec.containers[1]"} {
		fourEach = append(fourEach, p, p, p, p)
	}
	yes := true
	privB := func(s *corev1.PodSpec) { s.Containers[1].SecurityContext = &corev1.SecurityContext{Privileged: &yes} }
	hostNet := func(s *corev1.PodSpec) { s.HostNetwork = true }
	hostPath := func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	}
	hardened := func(s *corev1.PodSpec) {
		no := false
		s.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: &yes,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
			for i := range cs {
				cs[i].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: &no,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
			}
		}
	}
	tests := []struct {
		name   string
		level  v1alpha1.PodSecurityLevel
		mut    func(*corev1.PodSpec)
		fields []string
		reason string
	}{
		{"plain at baseline", v1alpha1.PodSecurityBaseline, nil, nil, ""},
		{"privileged container at baseline", v1alpha1.PodSecurityBaseline, privB, []string{"spec.containers[1]"}, "privileged"},
		{"privileged container at privileged", v1alpha1.PodSecurityPrivileged, privB, nil, ""},
		{"hostNetwork at baseline", v1alpha1.PodSecurityBaseline, hostNet, []string{"spec"}, "host namespaces"},
		{"hostPath at baseline", v1alpha1.PodSecurityBaseline, hostPath, []string{"spec"}, "hostPath volumes"},
		{"hostPath at restricted", v1alpha1.PodSecurityRestricted, func(s *corev1.PodSpec) { hardened(s); hostPath(s) },
			[]string{"spec"}, `restricted volume type "hostPath"`},
		// four restricted checks per container: allowPrivilegeEscalation,
		// capabilities, runAsNonRoot, seccompProfile
		{"plain at restricted", v1alpha1.PodSecurityRestricted, nil, fourEach, "allowPrivilegeEscalation"},
		{"hardened at restricted", v1alpha1.PodSecurityRestricted, hardened, nil, ""},
		{"unknown level is restricted", "bogus", nil, fourEach, `level "restricted": runAsNonRoot`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Check(tt.level, nil, spec(tt.mut), field.NewPath("spec"))
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
				if e.Type != field.ErrorTypeForbidden {
					t.Errorf("%s: type %s, want Forbidden", e.Field, e.Type)
				}
			}
			if !slices.Equal(got, tt.fields) {
				t.Errorf("fields %v, want %v (%v)", got, tt.fields, errs)
			}
			if tt.reason != "" && !strings.Contains(errs.ToAggregate().Error(), tt.reason) {
				t.Errorf("%v lacks %q", errs, tt.reason)
			}
			if v := Violation(tt.level, nil, spec(tt.mut)); (v == "") != (len(tt.fields) == 0) {
				t.Errorf("Violation %q disagrees with Check", v)
			}
		})
	}
}
