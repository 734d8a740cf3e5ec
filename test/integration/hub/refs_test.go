// SPDX-License-Identifier: Apache-2.0

package hub

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/framework"
)

// testReferences: a job whose template names a Secret missing from the
// member namespace is refused with InvalidArgument and the field path, and
// accepted once the Secret exists; an agent's hub kubeconfig reads the
// member namespace's Secrets and no other namespace's.
func testReferences(t *testing.T, h *hubProc, cp *framework.ControlPlane) {
	ctx := testCtx(t)
	cfg, err := h.adminContext().ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	jobs := shoalv1.NewJobsClient(conn)
	j := crashJob("refs")
	j.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "creds",
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "x"}}}}
	b, _ := json.Marshal(j)
	_, err = jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: b}})
	wantCode(t, err, codes.InvalidArgument, "template naming a missing Secret")
	if want := `spec.template.spec.volumes[0].secret.secretName: Not found: Secret "x" not found in namespace shoal-jobs`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("refusal %v does not say %s", err, want)
	}
	if _, err := jobs.Get(ctx, &shoalv1.GetJobRequest{Name: "refs"}); status.Code(err) != codes.NotFound {
		t.Errorf("refused job stored: Get = %v", err)
	}

	admin := kubernetes.NewForConfigOrDie(cp.Config)
	ns := v1alpha1.MemberNamespace
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: b}}); err != nil {
		t.Fatalf("job with its Secret present refused: %v", err)
	}

	a, err := register(t, ctx, h, createToken(t, ctx, h.admin(t), 600, 1).Token, "eu2", "uid-eu2")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(a.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	// The agent reads the hub's copy in its cluster's namespace, never the
	// users' original.
	own := v1alpha1.ClusterNamespace("eu2")
	if _, err := admin.CoreV1().Secrets(own).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(own).Get(ctx, "x", metav1.GetOptions{}); err != nil {
		t.Errorf("agent reading the copy of a member Secret in its namespace: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(own).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("agent listing the ConfigMaps of its namespace: %v", err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("agent reading a Secret of the users' namespace: %v, want Forbidden", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("agent listing the ConfigMaps of the users' namespace: %v, want Forbidden", err)
	}
	if _, err := cs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("agent listing kube-system Secrets: %v, want Forbidden", err)
	}
	if err := cs.CoreV1().Secrets(own).Delete(ctx, "x", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("agent deleting a Secret of its namespace: %v, want Forbidden", err)
	}
}
