// SPDX-License-Identifier: Apache-2.0

package dispatch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/dispatch"
)

// passUntil passes until cond holds (the copy caches follow the fake
// cluster asynchronously).
func (r *rig) passUntil(what string, cond func() error) {
	r.T.Helper()
	var last error
	err := wait.PollUntilContextTimeout(r.Ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		r.pass()
		last = cond()
		return last == nil, nil
	})
	if err != nil {
		r.T.Fatalf("%s: %v", what, last)
	}
}

// TestDependenciesCopiedIntoEveryMemberCluster: the ConfigMap and Secret a
// two-cluster gang references in the users' namespace are copied into both
// clusters' namespaces (and nowhere else), a change of the original reaches
// the copies, and the copies go when the job ends.
func TestDependenciesCopiedIntoEveryMemberCluster(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0))
	r.Cluster("us1", node("b", "r", 0))
	r.Cluster("ap1", node("c", "r", 0))
	users := v1alpha1.MemberNamespace
	for _, o := range []func() error{
		func() error {
			_, err := r.hub.CoreV1().ConfigMaps(users).Create(r.Ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: users},
				Data: map[string]string{"model": "llama"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := r.hub.CoreV1().Secrets(users).Create(r.Ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: users},
				Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"token": []byte("one")}}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := o(); err != nil {
			t.Fatal(err)
		}
	}
	// A dispatcher started after the originals exist: the fake cluster
	// drops what is created between an informer's list and its watch.
	r.disp = r.dispatcher(dispatch.Config{Clock: r.Clock, PrepareTimeout: 10 * time.Second})
	r.Submit("mix", 2, 8, func(j *v1alpha1.Job) {
		j.Spec.Placement.MaxClusters = 2
		c := &j.Spec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "MODEL", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "model"}}})
		j.Spec.Template.Spec.Volumes = append(j.Spec.Template.Spec.Volumes, corev1.Volume{Name: "creds",
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}})
	})
	r.cycle()
	clusters := map[string]bool{}
	r.passUntil("members created", func() error {
		for _, p := range r.pods("mix") {
			clusters[p.Labels[v1alpha1.LabelCluster]] = true
		}
		if len(clusters) != 2 {
			return fmt.Errorf("members on %v, want two clusters", clusters)
		}
		return nil
	})
	var involved, others []string
	for _, c := range []string{"eu1", "us1", "ap1"} {
		if clusters[c] {
			involved = append(involved, v1alpha1.ClusterNamespace(c))
		} else {
			others = append(others, v1alpha1.ClusterNamespace(c))
		}
	}
	r.passUntil("copies in both clusters' namespaces", func() error {
		for _, ns := range involved {
			cm, err := r.hub.CoreV1().ConfigMaps(ns).Get(r.Ctx, "cfg", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cm.Data["model"] != "llama" || cm.Labels[v1alpha1.LabelCopy] != "true" || cm.Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByHub ||
				cm.Annotations[v1alpha1.AnnotationCopyJobs] != "mix" {
				return fmt.Errorf("copy in %s: %v %v %v", ns, cm.Data, cm.Labels, cm.Annotations)
			}
			s, err := r.hub.CoreV1().Secrets(ns).Get(r.Ctx, "creds", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if string(s.Data["token"]) != "one" || s.Type != corev1.SecretTypeOpaque {
				return fmt.Errorf("secret copy in %s: %v", ns, s.Data)
			}
		}
		return nil
	})
	for _, ns := range others {
		if _, err := r.hub.CoreV1().Secrets(ns).Get(r.Ctx, "creds", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a copy in %s, which holds no member: %v", ns, err)
		}
	}
	sec, err := r.hub.CoreV1().Secrets(users).Get(r.Ctx, "creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data["token"] = []byte("two")
	sec.ResourceVersion = "2" // the fake tracker keeps what it is given
	if _, err := r.hub.CoreV1().Secrets(users).Update(r.Ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.passUntil("the original's change copied", func() error {
		for _, ns := range involved {
			s, err := r.hub.CoreV1().Secrets(ns).Get(r.Ctx, "creds", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if string(s.Data["token"]) != "two" {
				return fmt.Errorf("copy in %s still %q", ns, s.Data["token"])
			}
		}
		return nil
	})
	if _, _, err := r.Jobs.Cancel(r.Ctx, "mix"); err != nil {
		t.Fatal(err)
	}
	r.passUntil("copies deleted with the job", func() error {
		for _, ns := range involved {
			if _, err := r.hub.CoreV1().ConfigMaps(ns).Get(r.Ctx, "cfg", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("configmap copy in %s: %v", ns, err)
			}
			if _, err := r.hub.CoreV1().Secrets(ns).Get(r.Ctx, "creds", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("secret copy in %s: %v", ns, err)
			}
		}
		return nil
	})
	if _, err := r.hub.CoreV1().Secrets(users).Get(r.Ctx, "creds", metav1.GetOptions{}); err != nil {
		t.Errorf("the original is gone: %v", err)
	}
}

// TestForeignLabelledObjectsLeftAlone: a pod, Service or ConfigMap that
// carries Shoal's labels outside the clusters' hub namespaces (or a pod in
// one without its cluster label) is not the dispatcher's: no pass deletes it.
func TestForeignLabelledObjectsLeftAlone(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0))
	job := map[string]string{v1alpha1.LabelJob: "stranger"}
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "stranger-e1-0", Namespace: "default", Labels: job}},
		{ObjectMeta: metav1.ObjectMeta{Name: "stranger-e1-1", Namespace: ns, Labels: job}},
		{ObjectMeta: metav1.ObjectMeta{Name: "stranger-e1-2", Namespace: "team", Labels: map[string]string{
			v1alpha1.LabelJob: "stranger", v1alpha1.LabelCluster: "eu1"}}},
	}
	for _, p := range pods {
		if _, err := r.hub.CoreV1().Pods(p.Namespace).Create(r.Ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "stranger", Namespace: "default", Labels: job}}
	if _, err := r.hub.CoreV1().Services("default").Create(r.Ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	copyLabels := map[string]string{v1alpha1.LabelCopy: "true", v1alpha1.ManagedByLabel: v1alpha1.ManagedByHub}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lookalike", Namespace: "team", Labels: copyLabels}}
	if _, err := r.hub.CoreV1().ConfigMaps("team").Create(r.Ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A fresh dispatcher, whose caches list them all.
	r.disp = r.dispatcher(dispatch.Config{Clock: r.Clock, PrepareTimeout: 10 * time.Second})
	for range 3 {
		r.pass()
	}
	for _, p := range pods {
		got, err := r.hub.CoreV1().Pods(p.Namespace).Get(r.Ctx, p.Name, metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp != nil {
			t.Errorf("pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
	if _, err := r.hub.CoreV1().Services("default").Get(r.Ctx, "stranger", metav1.GetOptions{}); err != nil {
		t.Errorf("service: %v", err)
	}
	if _, err := r.hub.CoreV1().ConfigMaps("team").Get(r.Ctx, "lookalike", metav1.GetOptions{}); err != nil {
		t.Errorf("configmap: %v", err)
	}
}
