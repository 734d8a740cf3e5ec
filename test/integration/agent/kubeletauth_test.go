// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/framework"
)

// placedPod is a hub pod as Shoal's dispatcher places it: labelled with its
// job, which the kubelet endpoints require of every pod they serve.
func placedPod(name, node string, ann map[string]string, gpus int64) *corev1.Pod {
	p := hubPod(name, node, ann, gpus)
	p.Labels[v1alpha1.LabelJob] = name
	return p
}

// kubeletURL is the address of a virtual node's kubelet endpoint, as the
// hub API server dials it.
func kubeletURL(ctx context.Context, t *testing.T, node string) string {
	t.Helper()
	n, err := hubAdmin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return "https://" + net.JoinHostPort(a.Address, strconv.Itoa(int(n.Status.DaemonEndpoints.KubeletEndpoint.Port)))
		}
	}
	t.Fatalf("node %s has no InternalIP", node)
	return ""
}

// kubeletGet asks a kubelet endpoint directly with the client certificates
// given; err is set when the TLS handshake (or the connection) fails.
func kubeletGet(ctx context.Context, url string, certs ...tls.Certificate) (int, string, error) {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs}} //nolint:gosec // the endpoint's certificate is self-signed, as the hub API server accepts it
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

// testKubeletAuth proves the virtual nodes' kubelet endpoints are locked
// down as a kubelet's are: clients without a certificate of the hub API
// server's kubelet client CA are refused at the handshake, a valid
// certificate's user needs nodes/proxy on the node (SubjectAccessReview on
// the hub cluster), and only members Shoal placed on the node are served.
// The trainer member must be running on h100Node.
func testKubeletAuth(ctx context.Context, t *testing.T) {
	base := kubeletURL(ctx, t, h100Node)
	logs := base + "/containerLogs/" + hubNS + "/trainer/main"

	if code, body, err := kubeletGet(ctx, logs); err == nil {
		t.Errorf("no client certificate: served %d %q, want the handshake refused", code, body)
	} else {
		t.Logf("no client certificate: %v", err)
	}
	other, err := framework.NewKubeletClientCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := other.Issue(framework.KubeletClientUser, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	if code, body, err := kubeletGet(ctx, logs, stranger); err == nil {
		t.Errorf("certificate of another CA (same user): served %d %q, want the handshake refused", code, body)
	} else {
		t.Logf("certificate of another CA: %v", err)
	}

	// A valid certificate of a user with no right on the node.
	nobody, err := hubCP.KubeletClientCA.Issue("kubelet-nobody", "team-a")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/containerLogs/" + hubNS + "/trainer/main", "/pods", "/stats/summary"} {
		code, body, err := kubeletGet(ctx, base+path, nobody)
		if err != nil || code != http.StatusForbidden || !strings.Contains(body, "user=kubelet-nobody") {
			t.Errorf("%s as a user without rights: %d %q %v, want 403", path, code, body, err)
		}
	}

	// A user granted nodes/proxy get on the hub cluster reads the member's
	// logs, and nothing of a pod Shoal did not place.
	reader, err := hubCP.KubeletClientCA.Issue("kubelet-reader")
	if err != nil {
		t.Fatal(err)
	}
	grant(ctx, t, "kubelet-reader", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"}})
	eventually(t, 30*time.Second, "logs as a user with nodes/proxy", func(ctx context.Context) (bool, error) {
		code, body, err := kubeletGet(ctx, logs, reader)
		if err != nil || code != http.StatusOK {
			return false, fmt.Errorf("%d %q %v", code, body, err)
		}
		return strings.Contains(body, "hello from "+teamA+"/trainer container main"), nil
	})
	stray := hubPod("stray", h100Node, map[string]string{v1alpha1.AnnotationTargetNode: "n1"}, 0) // no job label
	if _, err := hubAdmin.CoreV1().Pods(hubNS).Create(ctx, stray, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		zero := int64(0)
		_ = hubAdmin.CoreV1().Pods(hubNS).Delete(ctx, "stray", metav1.DeleteOptions{GracePeriodSeconds: &zero})
		waitLocalGone(t, "stray")
	}()
	waitLocal(t, "stray")
	if err := bindAndRun(ctx, work, teamA, "stray", "n1"); err != nil {
		t.Fatal(err)
	}
	if code, body, err := kubeletGet(ctx, base+"/containerLogs/"+hubNS+"/stray/main", reader); err != nil || code != http.StatusNotFound {
		t.Errorf("logs of a pod Shoal did not place: %d %q %v, want 404", code, body, err)
	}
	if code, body, err := kubeletGet(ctx, base+"/pods", reader); err != nil || code != http.StatusOK || strings.Contains(body, `"stray"`) ||
		!strings.Contains(body, `"trainer"`) {
		t.Errorf("/pods as reader: %d %v, want the trainer and not the stray pod (%s)", code, err, body)
	}
	// nodes/proxy get does not allow exec (create).
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{reader}}} //nolint:gosec // self-signed
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/exec/"+hubNS+"/trainer/main?command=id&output=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("exec as a user with nodes/proxy get only: %d, want 403", resp.StatusCode)
	}

	// The hub API server, with its own kubelet client certificate, still reaches the member.
	rc, err := hubAdmin.CoreV1().Pods(hubNS).GetLogs("trainer", &corev1.PodLogOptions{Container: "main"}).Stream(ctx)
	if err != nil {
		t.Fatalf("hub logs: %v", err)
	}
	got, _ := io.ReadAll(rc)
	_ = rc.Close()
	if !strings.Contains(string(got), "hello from "+teamA+"/trainer") {
		t.Errorf("hub logs = %q", got)
	}
	// Through the hub, too, the stray pod is unknown to the node.
	if _, err := hubAdmin.CoreV1().Pods(hubNS).GetLogs("stray", &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx); statusCode(err) != http.StatusNotFound {
		t.Errorf("hub logs of a pod Shoal did not place: %v, want not found", err)
	}
}

// grant gives user rule through a ClusterRole and ClusterRoleBinding on the
// hub cluster, removed when the test ends.
func grant(ctx context.Context, t *testing.T, user string, rule rbacv1.PolicyRule) {
	t.Helper()
	rbac := hubAdmin.RbacV1()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{rule}}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rbac.ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
		_ = rbac.ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{})
	})
}
