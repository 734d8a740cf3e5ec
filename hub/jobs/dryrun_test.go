// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
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

// template is a pod template the API server accepts.
func template() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "trainer", Image: "busybox"}},
	}}
}

// clientOf returns a client of the API server at host.
func clientOf(t *testing.T, host string) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: host})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// statusServer is an API server that answers every request with st.
func statusServer(t *testing.T, st *metav1.Status) string {
	t.Helper()
	st.Kind, st.APIVersion = "Status", "v1"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(st.Code))
		_ = json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestDryRunUnreachableHubCluster checks that a dry-run against an address
// nobody listens on is Unavailable with the cause, through Submit too, and
// that the job is not stored.
func TestDryRunUnreachableHubCluster(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	v := jobs.NewDryRunValidator(clientOf(t, "http://"+addr), "")

	err = v.Validate(testCtx(t), template())
	if !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("Validate = %v, want ErrUnavailable", err)
	}
	var ue *errs.UnavailableError
	if !errors.As(err, &ue) || ue.Dependency != "the hub cluster" {
		t.Fatalf("Validate = %#v, want an UnavailableError of the hub cluster", err)
	}
	if !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error does not carry the cause: %v", err)
	}

	ctx, q := testCtx(t), uniq("unreach")
	js, _ := services(t, []jobs.Option{jobs.WithTemplateValidator(v)}, q)
	j := job(uniq("a"), q)
	if _, _, _, err := js.Submit(ctx, j, false); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("Submit = %v, want ErrUnavailable", err)
	}
	if _, _, err := js.Get(ctx, j.Name); err == nil {
		t.Error("a job whose template could not be checked was stored")
	}
}

// TestDryRunHubClusterRefusals checks how the API server's refusals are
// classified: the hub's identity refused or the server overloaded is
// Unavailable with the API server's message; a template the server rejects
// is an InvalidError; any other answer stays an error of its own.
func TestDryRunHubClusterRefusals(t *testing.T) {
	gr := schema.GroupResource{Resource: "podtemplates"}
	forbidden := apierrors.NewForbidden(gr, "", errors.New(`User "shoal-hub" cannot create resource "podtemplates" in API group "" in the namespace "default"`))
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "PodTemplate"}, "", field.ErrorList{
		field.Invalid(field.NewPath("template", "spec", "containers").Index(0).Child("name"), "Not_A_DNS_Label", "a lowercase RFC 1123 label"),
	})
	tests := []struct {
		name        string
		status      *metav1.Status
		unavailable bool
		invalid     bool
	}{
		{"forbidden", &forbidden.ErrStatus, true, false},
		{"unauthorized", &apierrors.NewUnauthorized("token expired").ErrStatus, true, false},
		{"service unavailable", &apierrors.NewServiceUnavailable("etcd leader changed").ErrStatus, true, false},
		{"too many requests", &apierrors.NewTooManyRequests("slow down", 0).ErrStatus, true, false},
		{"invalid template", &invalid.ErrStatus, false, true},
		{"internal error", &apierrors.NewInternalError(errors.New("disk on fire")).ErrStatus, false, false},
		{"namespace not found", &apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "default").ErrStatus, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := jobs.NewDryRunValidator(clientOf(t, statusServer(t, tt.status)), "")
			err := v.Validate(testCtx(t), template())
			if err == nil {
				t.Fatal("Validate accepted a refused template")
			}
			if got := errors.Is(err, errs.ErrUnavailable); got != tt.unavailable {
				t.Errorf("Validate = %v: unavailable %v, want %v", err, got, tt.unavailable)
			}
			var inv *v1alpha1.InvalidError
			if got := errors.As(err, &inv); got != tt.invalid {
				t.Errorf("Validate = %v: invalid %v, want %v", err, got, tt.invalid)
			}
			if tt.unavailable && !strings.Contains(err.Error(), tt.status.Message) {
				t.Errorf("error %q does not carry the API server's message %q", err, tt.status.Message)
			}
		})
	}
}

// TestDryRunCanceled checks that a caller whose context ended gets its own
// error back, not Unavailable.
func TestDryRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	v := jobs.NewDryRunValidator(clientOf(t, statusServer(t, &metav1.Status{Code: http.StatusOK})), "")
	err := v.Validate(ctx, template())
	if !errors.Is(err, context.Canceled) || errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("Validate = %v, want context.Canceled and not unavailable", err)
	}
}
