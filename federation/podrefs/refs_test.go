// SPDX-License-Identifier: Apache-2.0

package podrefs

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

func cmRef(name string, opt *bool) *corev1.ConfigMapKeySelector {
	return &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k", Optional: opt}
}

func secRef(name string, opt *bool) *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k", Optional: opt}
}

// fullSpec names one object through every kind of reference.
func fullSpec() *corev1.PodSpec {
	lr := func(n string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: n} }
	return &corev1.PodSpec{
		ServiceAccountName: "trainer",
		ImagePullSecrets:   []corev1.LocalObjectReference{lr("pull")},
		InitContainers: []corev1.Container{{Name: "init", Env: []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmRef("init-cm", nil)}},
		}}},
		Containers: []corev1.Container{{Name: "main",
			Env: []corev1.EnvVar{
				{Name: "PLAIN", Value: "x"},
				{Name: "FIELD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmRef("env-cm", no())}},
				{Name: "SEC", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: secRef("env-sec", nil)}},
				{Name: "OPT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: secRef("opt-sec", yes())}},
			},
			EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: lr("from-cm")}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: lr("from-sec"), Optional: yes()}},
			},
		}},
		Volumes: []corev1.Volume{
			{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: lr("vol-cm")}}},
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-sec"}}},
			{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: lr("proj-cm"), Optional: yes()}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: lr("proj-sec")}},
			}}}},
			{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-sec"}}}},
		},
	}
}

func TestReferencesFindsEveryKind(t *testing.T) {
	root := field.NewPath("spec", "template", "spec")
	type row struct {
		Kind     Kind
		Name     string
		Path     string
		Optional bool
	}
	var got []row
	for _, r := range References(fullSpec(), root) {
		got = append(got, row{r.Kind, r.Name, r.Path.String(), r.Optional})
	}
	p := "spec.template.spec."
	want := []row{
		{ConfigMap, "init-cm", p + "initContainers[0].env[0].valueFrom.configMapKeyRef.name", false},
		{ConfigMap, "env-cm", p + "containers[0].env[2].valueFrom.configMapKeyRef.name", false},
		{Secret, "env-sec", p + "containers[0].env[3].valueFrom.secretKeyRef.name", false},
		{Secret, "opt-sec", p + "containers[0].env[4].valueFrom.secretKeyRef.name", true},
		{ConfigMap, "from-cm", p + "containers[0].envFrom[0].configMapRef.name", false},
		{Secret, "from-sec", p + "containers[0].envFrom[1].secretRef.name", true},
		{ConfigMap, "vol-cm", p + "volumes[0].configMap.name", false},
		{Secret, "vol-sec", p + "volumes[1].secret.secretName", false},
		{ConfigMap, "proj-cm", p + "volumes[2].projected.sources[1].configMap.name", true},
		{Secret, "proj-sec", p + "volumes[2].projected.sources[2].secret.name", false},
		{Secret, "csi-sec", p + "volumes[4].csi.nodePublishSecretRef.name", false},
		{Secret, "pull", p + "imagePullSecrets[0].name", false},
		{ServiceAccount, "trainer", p + "serviceAccountName", false},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("References (-want +got):\n%s", d)
	}
}

func TestRequiredSkipsOptional(t *testing.T) {
	var names []string
	for _, r := range Required(References(fullSpec(), field.NewPath("spec"))) {
		names = append(names, r.Name)
	}
	want := []string{"init-cm", "env-cm", "env-sec", "from-cm", "vol-cm", "vol-sec", "proj-sec", "csi-sec", "pull", "trainer"}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("Required (-want +got):\n%s", d)
	}
}

func TestServiceAccount(t *testing.T) {
	for _, tc := range []struct {
		name, sa, deprecated string
		want                 []string
	}{
		{name: "default is not a reference", sa: "default"},
		{name: "none"},
		{name: "named", sa: "x", want: []string{"x@spec.serviceAccountName"}},
		{name: "deprecated field when the new one is empty", deprecated: "y", want: []string{"y@spec.serviceAccount"}},
		{name: "deprecated default", deprecated: "default"},
		{name: "new field wins", sa: "x", deprecated: "y", want: []string{"x@spec.serviceAccountName"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range References(&corev1.PodSpec{ServiceAccountName: tc.sa, DeprecatedServiceAccount: tc.deprecated}, field.NewPath("spec")) {
				if r.Kind != ServiceAccount {
					t.Fatalf("kind %s", r.Kind)
				}
				got = append(got, r.Name+"@"+r.Path.String())
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestObjectsDeduplicates(t *testing.T) {
	spec := &corev1.PodSpec{
		Containers: []corev1.Container{{Name: "a", Env: []corev1.EnvVar{
			{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: secRef("s", yes())}},
			{Name: "Y", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmRef("o", yes())}},
		}}},
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}},
	}
	objs, optional := Objects(References(spec, field.NewPath("spec")))
	want := []Object{{Secret, "s"}, {ConfigMap, "o"}}
	if d := cmp.Diff(want, objs); d != "" {
		t.Errorf("Objects (-want +got):\n%s", d)
	}
	if optional[Object{Secret, "s"}] || !optional[Object{ConfigMap, "o"}] {
		t.Errorf("optional = %v: s is required by its volume, o only optional", optional)
	}
}

func TestCheckSecretRefusesTokens(t *testing.T) {
	tok := &corev1.Secret{Type: corev1.SecretTypeServiceAccountToken}
	tok.Name = "hub-token"
	var nc *NotCarriedError
	if err := CheckSecret(tok); !errors.As(err, &nc) || nc.Name != "hub-token" {
		t.Errorf("CheckSecret(token) = %v", err)
	}
	if err := CheckSecret(&corev1.Secret{Type: corev1.SecretTypeOpaque}); err != nil {
		t.Errorf("CheckSecret(opaque) = %v", err)
	}
}
