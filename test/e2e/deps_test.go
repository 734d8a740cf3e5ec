// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// refsJob is a gang of members×8 GPUs on cluster c whose first container
// reads MODEL from ConfigMap cm (key model) and mounts Secret sec at
// /etc/creds.
func refsJob(name, c string, members int32, cm, sec string) *v1alpha1.Job {
	return testjob.New(name).Queue("e2e").Members(members).GPUs(8).With(onCluster(c)).
		ConfigMapEnv("MODEL", cm, "model").SecretVolume("creds", sec, "/etc/creds").Obj()
}

// TestDependenciesReachTheWorkloadCluster: a template naming a missing
// Secret is refused at submit with its field path; a job whose template
// reads a ConfigMap into its env and mounts a Secret gets copies of both in
// its members' workload cluster before the members start, a change on the
// hub reaches the copy while the job runs, and the copies go when the job
// ends.
func TestDependenciesReachTheWorkloadCluster(t *testing.T) {
	skipShort(t)
	ctx := t.Context()
	c := spare()
	work := workloads[c]
	hubObjs := h.kube.CoreV1()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "deps-cfg", Namespace: memberNS}, Data: map[string]string{"model": "llama"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "deps-creds", Namespace: memberNS}, Data: map[string][]byte{"token": []byte("one")}}
	if _, err := hubObjs.ConfigMaps(memberNS).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := hubObjs.Secrets(memberNS).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		_ = hubObjs.ConfigMaps(memberNS).Delete(bg, cm.Name, metav1.DeleteOptions{})
		_ = hubObjs.Secrets(memberNS).Delete(bg, sec.Name, metav1.DeleteOptions{})
	})

	js := jobs.New(h.st, jobs.WithReferenceChecker(jobs.NewKubeReferenceChecker(h.kube, memberNS)))
	ensureQueue(t, "e2e")
	_, _, _, err := js.Submit(ctx, refsJob("deps-missing", c, 1, cm.Name, "no-such-secret"), false)
	var inv *v1alpha1.InvalidError
	want := `spec.template.spec.volumes[0].secret.secretName: Not found: Secret "no-such-secret" not found in namespace ` + memberNS
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), want) {
		t.Fatalf("submit naming a missing Secret = %v, want %s", err, want)
	}
	if _, _, err := h.jobs.Get(ctx, "deps-missing"); err == nil {
		t.Fatal("the refused job was stored")
	}

	if _, _, _, err := js.Submit(ctx, refsJob("deps", c, 2, cm.Name, sec.Name), false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancelAndWaitGone(t, "deps") })
	waitPhase(t, "deps", v1alpha1.JobRunning, time.Minute)

	localNS := v1alpha1.LocalMemberNamespace("e2e") // the copies live with the members, in their queue's namespace
	lcm, err := work.CoreV1().ConfigMaps(localNS).Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil || lcm.Data["model"] != "llama" || lcm.Labels[v1alpha1.LabelCopy] != "true" ||
		lcm.Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByAgent || lcm.Annotations[v1alpha1.AnnotationCopyJobs] != "deps" {
		t.Fatalf("ConfigMap copy in %s: %v %+v", c, err, lcm)
	}
	lsec, err := work.CoreV1().Secrets(localNS).Get(ctx, sec.Name, metav1.GetOptions{})
	if err != nil || string(lsec.Data["token"]) != "one" || lsec.Labels[v1alpha1.LabelCopy] != "true" {
		t.Fatalf("Secret copy in %s: %v %+v", c, err, lsec)
	}
	local, err := localPods(ctx, "deps")
	if err != nil || len(local[c]) != 2 {
		t.Fatalf("local pods of deps in %s: %v (%d)", c, err, len(local[c]))
	}
	for _, p := range local[c] {
		if !p.CreationTimestamp.After(lsec.CreationTimestamp.Time) && !p.CreationTimestamp.Equal(&lsec.CreationTimestamp) {
			t.Errorf("local pod %s created at %v, before the Secret copy (%v)", p.Name, p.CreationTimestamp, lsec.CreationTimestamp)
		}
		if v := p.Spec.Volumes; len(v) == 0 || v[0].Secret == nil || v[0].Secret.SecretName != sec.Name {
			t.Errorf("local pod %s volumes %+v", p.Name, v)
		}
	}

	cur, err := hubObjs.Secrets(memberNS).Get(ctx, sec.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Data["token"] = []byte("two")
	if _, err := hubObjs.Secrets(memberNS).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "hub Secret update reaches the copy", func(ctx context.Context) (bool, error) {
		s, err := work.CoreV1().Secrets(localNS).Get(ctx, sec.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return string(s.Data["token"]) == "two", fmt.Errorf("copy holds %q", s.Data["token"])
	})

	cancelAndWaitGone(t, "deps")
	eventually(t, 30*time.Second, "copies removed after the job", func(ctx context.Context) (bool, error) {
		_, cerr := work.CoreV1().ConfigMaps(localNS).Get(ctx, cm.Name, metav1.GetOptions{})
		_, serr := work.CoreV1().Secrets(localNS).Get(ctx, sec.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(cerr) && apierrors.IsNotFound(serr), fmt.Errorf("ConfigMap: %v, Secret: %v", cerr, serr)
	})
	if _, err := hubObjs.Secrets(memberNS).Get(ctx, sec.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the hub's Secret went with the copies: %v", err)
	}
}
