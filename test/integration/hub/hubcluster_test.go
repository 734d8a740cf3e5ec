// SPDX-License-Identifier: Apache-2.0

package hub

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/framework"
)

// writeKubeconfig writes an admin kubeconfig for cfg.
func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "admin"}
	kc.CurrentContext = "hub"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHubManagementCluster runs the hub with --kubeconfig on a real
// kube-apiserver: registration hands out a scoped kubeconfig that works for
// the cluster's own virtual nodes only, removal revokes it, and job pod
// templates are checked by the API server's validator.
func TestHubManagementCluster(t *testing.T) {
	cp, err := framework.StartControlPlane()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	h := startHub(t, "--kubeconfig", writeKubeconfig(t, cp.Config))
	ctx := testCtx(t)
	admin := h.admin(t)

	a, err := register(t, ctx, h, createToken(t, ctx, admin, 600, 1).Token, "eu1", "uid-eu1")
	if err != nil {
		t.Fatalf("Register with a hub cluster: %v", err)
	}
	if len(a.kubeconfig) == 0 {
		t.Fatal("Register returned no hub kubeconfig")
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(a.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	node := func(name, cluster string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"shoal.dev/cluster": cluster}}}
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node("shoal-eu1-h100", "eu1"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("agent creating its own virtual node: %v", err)
	}
	// The API server enforces a new admission policy once its informer has
	// it: poll until another cluster's node is refused.
	adminCS := kubernetes.NewForConfigOrDie(cp.Config)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cs.CoreV1().Nodes().Create(ctx, node("shoal-us1-h100", "us1"), metav1.CreateOptions{})
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			break
		}
		if err == nil {
			_ = adminCS.CoreV1().Nodes().Delete(ctx, "shoal-us1-h100", metav1.DeleteOptions{})
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent creating another cluster's node: %v, want Forbidden", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	if _, err := admin.RemoveCluster(ctx, &shoalv1.RemoveClusterRequest{Name: "eu1"}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second) // the API server caches token reviews for a few seconds
	for {
		_, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if apierrors.IsUnauthorized(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("removed cluster's hub kubeconfig still accepted: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	testTemplateDryRun(t, h)
	testReferences(t, h, cp)
}

// testTemplateDryRun: a job whose pod template the Kubernetes validator
// rejects is refused with InvalidArgument.
func testTemplateDryRun(t *testing.T, h *hubProc) {
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
	q, _ := json.Marshal(map[string]any{"apiVersion": v1alpha1.APIVersion, "kind": "Queue", "metadata": map[string]string{"name": "crash"}})
	if _, err := shoalv1.NewQueuesClient(conn).Create(ctx, &shoalv1.CreateQueueRequest{Queue: &shoalv1.Object{Json: q}}); err != nil {
		t.Fatal(err)
	}
	jobs := shoalv1.NewJobsClient(conn)
	good, _ := json.Marshal(crashJob("good"))
	if _, err := jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: good}}); err != nil {
		t.Fatalf("valid job refused: %v", err)
	}
	bad := crashJob("bad")
	bad.Spec.Template.Spec.Containers[0].ImagePullPolicy = "Sometimes"
	b, _ := json.Marshal(bad)
	_, err = jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: b}})
	wantCode(t, err, codes.InvalidArgument, "pod template the Kubernetes validator rejects")
}
