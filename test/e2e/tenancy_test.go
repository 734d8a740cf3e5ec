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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// TestTenancy: on the fleet, a member asking for privileged, hostPath or
// hostNetwork in a baseline (or restricted) queue is refused at submit with
// the library's reason and the field path; the members of queue
// tenancy/b run, in every workload cluster, in tenancy/b's namespace,
// labelled as Shoal's with the queue's level enforced, and MASTER_ADDR
// names that namespace, where the rendezvous Service is mirrored.
func TestTenancy(t *testing.T) {
	skipShort(t)
	ctx := t.Context()
	for _, q := range []*v1alpha1.Queue{
		testqueue.New("tenancy").PodSecurity(v1alpha1.PodSecurityPrivileged).Obj(),
		testqueue.New("tenancy/b").PodSecurity(v1alpha1.PodSecurityBaseline).Obj(),
		testqueue.New("tenancy/r").PodSecurity(v1alpha1.PodSecurityRestricted).Obj(),
	} {
		if _, _, err := h.queues.Create(ctx, q); err != nil && !isAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	yes := true
	refused := []struct {
		queue, field, reason string
		mutate               func(*v1alpha1.Job)
	}{
		{"tenancy/b", "spec.template.spec.containers[0]", "privileged", func(j *v1alpha1.Job) {
			j.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
		}},
		{"tenancy/r", "spec.template.spec.containers[0]", "privileged", func(j *v1alpha1.Job) {
			j.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
		}},
		{"tenancy/b", "spec.template.spec", "host namespaces", func(j *v1alpha1.Job) { j.Spec.Template.Spec.HostNetwork = true }},
		{"tenancy/b", "spec.template.spec", "hostPath volumes", func(j *v1alpha1.Job) {
			j.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}},
	}
	for i, tc := range refused {
		_, _, _, err := h.jobs.Submit(ctx, newJob(fmt.Sprintf("pss-refused-%d", i), tc.queue, 1, 8, tc.mutate), false)
		var inv *v1alpha1.InvalidError
		if !errors.As(err, &inv) {
			t.Fatalf("%s in %s: %v, want refused as invalid", tc.reason, tc.queue, err)
		}
		found := false
		for _, fe := range inv.Errs {
			found = found || fe.Field == tc.field && strings.Contains(fe.Detail, tc.reason)
		}
		if !found {
			t.Errorf("%s in %s: %v, want %s forbidden for %q", tc.reason, tc.queue, err, tc.field, tc.reason)
		}
	}

	submit(t, newJob("tenant", "tenancy/b", 2, 8, onCluster(spare())))
	waitPhase(t, "tenant", v1alpha1.JobRunning, time.Minute)
	ns := v1alpha1.LocalMemberNamespace("tenancy/b")
	local, err := localPods(ctx, "tenant")
	if err != nil || len(local[spare()]) != 2 {
		t.Fatalf("local pods %v (%v)", local, err)
	}
	for _, p := range local[spare()] {
		if p.Namespace != ns {
			t.Errorf("member %s in namespace %s, want the queue's %s", p.Name, p.Namespace, ns)
		}
		for _, e := range p.Spec.Containers[0].Env {
			if e.Name == v1alpha1.EnvMasterAddr && e.Value != "tenant-0.tenant."+ns {
				t.Errorf("member %s: MASTER_ADDR %q does not name the queue namespace", p.Name, e.Value)
			}
		}
	}
	got, err := workloads[spare()].CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil || got.Labels[v1alpha1.LabelManaged] != "true" || got.Labels[v1alpha1.PodSecurityEnforceLabel] != "baseline" {
		t.Fatalf("queue namespace %s: %v %v", ns, err, got.Labels)
	}
	eventually(t, 30*time.Second, "rendezvous Service in the queue namespace", func(ctx context.Context) (bool, error) {
		_, err := workloads[spare()].CoreV1().Services(ns).Get(ctx, v1alpha1.ServiceName("tenant"), metav1.GetOptions{})
		return err == nil, err
	})
}
