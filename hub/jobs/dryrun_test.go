package jobs_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/test/framework"
)

// controlPlane is a kube-apiserver started by the first test that needs
// one, stopped by TestMain.
var (
	controlPlane     *framework.ControlPlane
	controlPlaneErr  error
	controlPlaneOnce sync.Once
)

// kubeClient returns a client of the package's kube-apiserver.
func kubeClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	if testing.Short() {
		t.Skip("starts kube-apiserver")
	}
	controlPlaneOnce.Do(func() { controlPlane, controlPlaneErr = framework.StartControlPlane() })
	if controlPlaneErr != nil {
		t.Fatalf("start kube-apiserver (make k8s-bin builds it): %v", controlPlaneErr)
	}
	cs, err := kubernetes.NewForConfig(controlPlane.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestSubmitDryRunValidator checks templates with the real Kubernetes
// validator: a template it rejects is an invalid job whose errors carry
// spec.template paths; a good template is stored.
func TestSubmitDryRunValidator(t *testing.T) {
	cs := kubeClient(t)
	ctx, q := testCtx(t), uniq("k8s")
	js, _ := services(t, []jobs.Option{jobs.WithTemplateValidator(jobs.NewDryRunValidator(cs, ""))}, q)

	if _, _, _, err := js.Submit(ctx, job(uniq("good"), q), false); err != nil {
		t.Fatalf("valid template refused: %v", err)
	}
	bad := job(uniq("bad"), q)
	c := &bad.Spec.Template.Spec.Containers[0]
	c.Name = "Not_A_DNS_Label"
	c.ImagePullPolicy = "Sometimes"
	_, _, _, err := js.Submit(ctx, bad, false)
	var inv *v1alpha1.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("rejected template: got %v, want an InvalidError", err)
	}
	msg := err.Error()
	t.Logf("refusal: %s", msg)
	for _, want := range []string{"spec.template.spec.containers[0].name", "spec.template.spec.containers[0].imagePullPolicy"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not name %s:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "Invalid value: Invalid value") {
		t.Errorf("doubled error type:\n%s", msg)
	}
	if _, _, err := js.Get(ctx, bad.Name); err == nil {
		t.Error("a rejected job was stored")
	}
}
