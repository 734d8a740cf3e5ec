// SPDX-License-Identifier: Apache-2.0

package deps

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/agent/podsync"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testpod"
)

// hubNS is the cluster's namespace on the hub, where the hub pods and the
// hub's copies are; localNS the workload cluster's namespace of the
// members' queue, team, which the pod syncer made.
var (
	hubNS   = v1alpha1.ClusterNamespace("eu1")
	localNS = v1alpha1.LocalMemberNamespace("team")
)

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: hubNS, UID: types.UID("hub-" + name), ResourceVersion: "1"}
}

type env struct {
	s          *Syncer
	hub, local *fake.Clientset
	rec        *record.FakeRecorder
}

func start(t *testing.T, hubObjs ...any) *env {
	t.Helper()
	hub := fake.NewClientset()
	for _, o := range hubObjs {
		if err := hub.Tracker().Add(o.(object)); err != nil {
			t.Fatal(err)
		}
	}
	local := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: localNS,
		Labels: map[string]string{v1alpha1.LabelManaged: "true"}}})
	c, err := cluster.New(local)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{s: New(hub, hubNS, c, WithResync(50*time.Millisecond)), hub: hub, local: local, rec: record.NewFakeRecorder(20)}
	e.s.SetRecorder(e.rec)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Run(ctx) }()
	go func() { defer close(done); _ = e.s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

// member is a hub member pod of job and its local pod, referencing
// ConfigMap cm by env and Secret sec by volume.
func member(name, job, cm, sec string) (*corev1.Pod, *corev1.Pod) {
	hub := testpod.New(name).Namespace(hubNS).Container("main", nil).Label(v1alpha1.LabelJob, job).
		Annotation(v1alpha1.AnnotationQueue, "team").Obj()
	hub.UID = types.UID("uid-" + name)
	hub.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: "a"}}}}
	hub.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: sec}}}}
	return hub, podsync.LocalPod(hub, "v1", localNS)
}

func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within 10s (last: %v)", what, last)
	}
}

func TestEnsureCopiesEveryKind(t *testing.T) {
	automount := false
	sa := &corev1.ServiceAccount{ObjectMeta: meta("runner"), AutomountServiceAccountToken: &automount,
		Secrets: []corev1.ObjectReference{{Name: "runner-token"}}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}}}
	e := start(t,
		&corev1.ConfigMap{ObjectMeta: meta("cfg"), Data: map[string]string{"a": "1"}},
		&corev1.Secret{ObjectMeta: meta("creds"), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v")}},
		sa)
	ctx := t.Context()
	hub, local := member("m0", "job-a", "cfg", "creds")
	local.Spec.ServiceAccountName = "runner"
	if err := e.s.Ensure(ctx, hub, local); err != nil {
		t.Fatal(err)
	}
	cm, err := e.local.CoreV1().ConfigMaps(localNS).Get(ctx, "cfg", metav1.GetOptions{})
	if err != nil || cm.Data["a"] != "1" {
		t.Fatalf("ConfigMap copy: %v %+v", err, cm)
	}
	for k, v := range map[string]string{v1alpha1.LabelCopy: "true", v1alpha1.ManagedByLabel: v1alpha1.ManagedByAgent} {
		if cm.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cm.Labels[k], v)
		}
	}
	for k, v := range map[string]string{v1alpha1.AnnotationCopyJobs: "job-a", v1alpha1.AnnotationSourceUID: "hub-cfg", v1alpha1.AnnotationSourceVersion: "1"} {
		if cm.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, cm.Annotations[k], v)
		}
	}
	sec, err := e.local.CoreV1().Secrets(localNS).Get(ctx, "creds", metav1.GetOptions{})
	if err != nil || string(sec.Data["k"]) != "v" || sec.Type != corev1.SecretTypeOpaque {
		t.Fatalf("Secret copy: %v %+v", err, sec)
	}
	lsa, err := e.local.CoreV1().ServiceAccounts(localNS).Get(ctx, "runner", metav1.GetOptions{})
	if err != nil || len(lsa.Secrets) != 0 || len(lsa.ImagePullSecrets) != 0 || lsa.AutomountServiceAccountToken == nil || *lsa.AutomountServiceAccountToken {
		t.Fatalf("ServiceAccount copy is not plain: %v %+v", err, lsa)
	}
}

func TestEnsureRefusals(t *testing.T) {
	e := start(t,
		&corev1.ConfigMap{ObjectMeta: meta("cfg")},
		&corev1.Secret{ObjectMeta: meta("theirs")},
		&corev1.Secret{ObjectMeta: meta("tok"), Type: corev1.SecretTypeServiceAccountToken})
	ctx := t.Context()
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: localNS}, Data: map[string][]byte{"mine": []byte("x")}}
	if _, err := e.local.CoreV1().Secrets(localNS).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ sec, reason string }{
		{"missing", v1alpha1.ReasonDependencyMissing},
		{"theirs", v1alpha1.ReasonDependencyConflict},
		{"tok", v1alpha1.ReasonDependencyNotCarried},
	} {
		hub, local := member("m-"+tc.sec, "job-a", "cfg", tc.sec)
		var re *podsync.RefusedError
		if err := e.s.Ensure(ctx, hub, local); !errors.As(err, &re) || re.Reason != tc.reason {
			t.Errorf("secret %s: Ensure = %v, want refused %s", tc.sec, err, tc.reason)
		}
	}
	got, err := e.local.CoreV1().Secrets(localNS).Get(ctx, "theirs", metav1.GetOptions{})
	if err != nil || string(got.Data["mine"]) != "x" || got.Labels[v1alpha1.LabelCopy] != "" {
		t.Errorf("an object the agent did not create was changed: %v %+v", err, got)
	}
	if _, err := e.local.CoreV1().Secrets(localNS).Get(ctx, "tok", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a service-account token was copied: %v", err)
	}
	// The refused members released their claims: the ConfigMap copy goes.
	eventually(t, "copy of refused members removed", func(ctx context.Context) (bool, error) {
		_, err := e.local.CoreV1().ConfigMaps(localNS).Get(ctx, "cfg", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	// An optional reference to a missing object is skipped.
	hub, local := member("m-opt", "job-a", "cfg", "missing")
	opt := true
	local.Spec.Volumes[0].Secret.Optional = &opt
	if err := e.s.Ensure(ctx, hub, local); err != nil {
		t.Errorf("optional missing Secret: %v", err)
	}
}

func TestCopiesFollowTheHubAndGoWithTheirMembers(t *testing.T) {
	e := start(t,
		&corev1.ConfigMap{ObjectMeta: meta("cfg"), Data: map[string]string{"a": "1"}},
		&corev1.Secret{ObjectMeta: meta("creds"), Data: map[string][]byte{"k": []byte("v1")}},
		&corev1.Secret{ObjectMeta: meta("other")})
	ctx := t.Context()
	hubA, localA := member("a0", "job-a", "cfg", "creds")
	hubB, localB := member("b0", "job-b", "cfg", "other")
	for _, m := range [][2]*corev1.Pod{{hubA, localA}, {hubB, localB}} {
		if err := e.s.Ensure(ctx, m[0], m[1]); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "both jobs recorded on the shared copy", func(ctx context.Context) (bool, error) {
		cm, err := e.local.CoreV1().ConfigMaps(localNS).Get(ctx, "cfg", metav1.GetOptions{})
		return err == nil && cm.Annotations[v1alpha1.AnnotationCopyJobs] == "job-a,job-b", err
	})

	sec, _ := e.hub.CoreV1().Secrets(hubNS).Get(ctx, "creds", metav1.GetOptions{})
	sec.Data["k"], sec.ResourceVersion = []byte("v2"), "2"
	if _, err := e.hub.CoreV1().Secrets(hubNS).Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "hub update reaches the copy", func(ctx context.Context) (bool, error) {
		s, err := e.local.CoreV1().Secrets(localNS).Get(ctx, "creds", metav1.GetOptions{})
		return err == nil && string(s.Data["k"]) == "v2" && s.Annotations[v1alpha1.AnnotationSourceVersion] == "2", err
	})

	e.s.Release(hubA)
	eventually(t, "job-a's Secret copy removed", func(ctx context.Context) (bool, error) {
		_, err := e.local.CoreV1().Secrets(localNS).Get(ctx, "creds", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	cm, err := e.local.CoreV1().ConfigMaps(localNS).Get(ctx, "cfg", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the ConfigMap job-b still references was removed: %v", err)
	}
	eventually(t, "job-a no longer recorded", func(ctx context.Context) (bool, error) {
		cm, err = e.local.CoreV1().ConfigMaps(localNS).Get(ctx, "cfg", metav1.GetOptions{})
		return err == nil && cm.Annotations[v1alpha1.AnnotationCopyJobs] == "job-b", err
	})

	if err := e.hub.CoreV1().Secrets(hubNS).Delete(ctx, "other", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-e.rec.Events:
		if want := "Warning " + v1alpha1.ReasonDependencyMissing; len(ev) < len(want) || ev[:len(want)] != want {
			t.Errorf("event %q, want %s", ev, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event for the member whose Secret was deleted on the hub")
	}
	if _, err := e.local.CoreV1().Secrets(localNS).Get(ctx, "other", metav1.GetOptions{}); err != nil {
		t.Errorf("the copy of a running member was removed with its hub object: %v", err)
	}
	e.s.Release(hubB)
	eventually(t, "every copy removed", func(ctx context.Context) (bool, error) {
		cms, err := e.local.CoreV1().ConfigMaps(localNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		secs, err := e.local.CoreV1().Secrets(localNS).List(ctx, metav1.ListOptions{})
		return err == nil && len(cms.Items) == 0 && len(secs.Items) == 0, err
	})
}
