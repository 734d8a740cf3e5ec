// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

func memberObj(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: v1alpha1.MemberNamespace}
}

// refJob references ConfigMap cm by env and Secret sec by volume.
func refJob(name, queue, cm, sec string) *v1alpha1.Job {
	return testjob.New(name).Queue(queue).Members(2).GPUs(8).Command("sleep", "60").
		ConfigMapEnv("MODEL", cm, "model").SecretVolume("creds", sec, "/etc/creds").Obj()
}

// TestSubmitRefusesMissingReferences: a template naming a Secret that is
// not in the member namespace is refused with the field path, and nothing
// is stored; once it exists the job is accepted.
func TestSubmitRefusesMissingReferences(t *testing.T) {
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: memberObj("cfg")})
	ctx, q := testCtx(t), uniq("refs")
	js, _ := services(t, []jobs.Option{jobs.WithReferenceChecker(jobs.NewKubeReferenceChecker(cs, ""))}, q)

	j := refJob(uniq("missing"), q, "cfg", "x")
	_, _, _, err := js.Submit(ctx, j, false)
	var inv *v1alpha1.InvalidError
	if !errors.As(err, &inv) || len(inv.Errs) != 1 {
		t.Fatalf("Submit = %v, want an InvalidError with one problem", err)
	}
	want := `spec.template.spec.volumes[0].secret.secretName: Not found: Secret "x" not found in namespace shoal-jobs`
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error\n%s\ndoes not say\n%s", err, want)
	}
	if _, _, err := js.Get(ctx, j.Name); err == nil {
		t.Error("a job with a missing reference was stored")
	}
	if _, _, _, err := js.Submit(ctx, refJob(uniq("dry"), q, "cfg", "x"), true); !errors.As(err, &inv) {
		t.Errorf("dry run = %v, want the same refusal", err)
	}

	if _, err := cs.CoreV1().Secrets(v1alpha1.MemberNamespace).Create(ctx, &corev1.Secret{ObjectMeta: memberObj("x")}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := js.Submit(ctx, j, false); err != nil {
		t.Fatalf("Submit with every reference present = %v", err)
	}
}

// TestSubmitReferenceProblems: every missing reference is named, each at
// its path; optional ones and the default ServiceAccount are not checked;
// a service-account token Secret is refused; spec errors come with them.
func TestSubmitReferenceProblems(t *testing.T) {
	tok := &corev1.Secret{ObjectMeta: memberObj("hub-token"), Type: corev1.SecretTypeServiceAccountToken}
	cs := fake.NewClientset(tok)
	ctx, q := testCtx(t), uniq("refs")
	js, _ := services(t, []jobs.Option{jobs.WithReferenceChecker(jobs.NewKubeReferenceChecker(cs, ""))}, q)
	optional := true
	j := refJob(uniq("many"), q, "no-cm", "hub-token")
	j.Spec.Gang.Members = 0
	s := &j.Spec.Template.Spec
	s.ServiceAccountName = "runner"
	s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "no-pull"}}
	s.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "opt"}, Optional: &optional}}}
	_, _, _, err := js.Submit(ctx, j, false)
	var inv *v1alpha1.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("Submit = %v, want an InvalidError", err)
	}
	got := map[string]string{}
	for _, fe := range inv.Errs {
		got[fe.Field] = fe.Error()
	}
	p := "spec.template.spec."
	for path, want := range map[string]string{
		"spec.gang.members": "",
		p + "containers[0].env[0].valueFrom.configMapKeyRef.name": `ConfigMap "no-cm" not found`,
		p + "volumes[0].secret.secretName":                        "service-account token",
		p + "imagePullSecrets[0].name":                            `Secret "no-pull" not found`,
		p + "serviceAccountName":                                  `ServiceAccount "runner" not found`,
	} {
		if msg, ok := got[path]; !ok || !strings.Contains(msg, want) {
			t.Errorf("%s: got %q, want it to say %q", path, msg, want)
		}
	}
	if len(got) != 5 {
		t.Errorf("%d problems, want 5 (the optional envFrom is not checked):\n%v", len(got), err)
	}
}

// TestSubmitReferencesWithHubClusterDown: a job without references does not
// need the hub cluster; one with references is Unavailable and not stored.
func TestSubmitReferencesWithHubClusterDown(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	ctx, q := testCtx(t), uniq("refsdown")
	js, _ := services(t, []jobs.Option{jobs.WithReferenceChecker(jobs.NewKubeReferenceChecker(clientOf(t, "http://"+addr), ""))}, q)

	if _, _, _, err := js.Submit(ctx, job(uniq("plain"), q), false); err != nil {
		t.Errorf("a job without references needed the hub cluster: %v", err)
	}
	j := refJob(uniq("refs"), q, "cfg", "sec")
	_, _, _, err = js.Submit(ctx, j, false)
	var ue *errs.UnavailableError
	if !errors.Is(err, errs.ErrUnavailable) || !errors.As(err, &ue) || ue.Dependency != "the hub cluster" {
		t.Fatalf("Submit = %v, want Unavailable (the hub cluster)", err)
	}
	if _, _, err := js.Get(ctx, j.Name); err == nil {
		t.Error("a job whose references could not be checked was stored")
	}
}

// TestSubmitReferencesOnKubeAPIServer runs the check against a real API
// server: the refusal names the path; present objects pass.
func TestSubmitReferencesOnKubeAPIServer(t *testing.T) {
	cs := kubeClient(t)
	ctx, q := testCtx(t), uniq("refsk8s")
	ns := uniq("members")
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	js, _ := services(t, []jobs.Option{jobs.WithTemplateValidator(jobs.NewDryRunValidator(cs, "")),
		jobs.WithReferenceChecker(jobs.NewKubeReferenceChecker(cs, ns))}, q)
	_, _, _, err := js.Submit(ctx, refJob(uniq("a"), q, "cfg", "x"), false)
	want := `spec.template.spec.volumes[0].secret.secretName: Not found: Secret "x" not found in namespace ` + ns
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Submit = %v, want %s", err, want)
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := js.Submit(ctx, refJob(uniq("b"), q, "cfg", "x"), false); err != nil {
		t.Fatalf("Submit with the references present = %v", err)
	}
}
