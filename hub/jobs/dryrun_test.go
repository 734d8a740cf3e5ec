package jobs_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
)

// controlPlane is an etcd + kube-apiserver started by the first test that
// needs one, stopped by TestMain. (It is test/framework.StartControlPlane,
// which hub packages may not import.)
var (
	controlPlane     *envtest.Environment
	controlPlaneCfg  *rest.Config
	controlPlaneErr  error
	controlPlaneOnce sync.Once
)

// binDir is where `make k8s-bin` puts kube-apiserver and etcd:
// $SHOAL_CACHE/bin, default <user cache dir>/shoal/bin.
func binDir() string {
	if d := os.Getenv("SHOAL_CACHE"); d != "" {
		return filepath.Join(d, "bin")
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = filepath.Join(os.TempDir(), "cache")
	}
	return filepath.Join(base, "shoal", "bin")
}

// kubeClient returns a client of the package's kube-apiserver.
func kubeClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	if testing.Short() {
		t.Skip("starts kube-apiserver")
	}
	controlPlaneOnce.Do(func() {
		controlPlane = &envtest.Environment{BinaryAssetsDirectory: binDir()}
		controlPlaneCfg, controlPlaneErr = controlPlane.Start()
	})
	if controlPlaneErr != nil {
		t.Fatalf("start kube-apiserver from %s (make k8s-bin builds it): %v", binDir(), controlPlaneErr)
	}
	cs, err := kubernetes.NewForConfig(controlPlaneCfg)
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
