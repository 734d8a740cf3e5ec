// SPDX-License-Identifier: Apache-2.0

package upgrade_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// fleetPods reads a job's pods on both sides: its hub pods in the hub
// cluster and the agents' local pods in the workload clusters.
type fleetPods struct {
	hub       kubernetes.Interface
	workloads map[string]kubernetes.Interface
}

// members is a job's pods: "<side>/<namespace>/<name>" -> UID, side being
// "hub" or the workload cluster's name.
type members map[string]types.UID

func (m members) String() string { return strings.Join(slices.Sorted(maps.Keys(m)), " ") }

func (f fleetPods) of(ctx context.Context, job string) (members, error) {
	sel := metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job}
	out := members{}
	add := func(side string, cs kubernetes.Interface) error {
		l, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, sel)
		if err != nil {
			return fmt.Errorf("%s: %w", side, err)
		}
		for _, p := range l.Items {
			out[side+"/"+p.Namespace+"/"+p.Name] = p.UID
		}
		return nil
	}
	if err := add("hub", f.hub); err != nil {
		return nil, err
	}
	for name, cs := range f.workloads {
		if err := add(name, cs); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// localPods returns the job's local pods in every workload cluster.
func (f fleetPods) localPods(ctx context.Context, job string) (map[string][]corev1.Pod, error) {
	out := map[string][]corev1.Pod{}
	for name, cs := range f.workloads {
		l, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job})
		if err != nil {
			return nil, err
		}
		out[name] = l.Items
	}
	return out, nil
}

// steady samples, every 250 ms until stopped, the pods of the jobs it
// watches and records every sample in which a job's pods differ from the
// baseline taken when it started watching: a member created twice, moved,
// replaced or lost.
type steady struct {
	pods fleetPods

	mu       sync.Mutex
	base     map[string]members
	samples  int
	problems []string
}

func newSteady(pods fleetPods) *steady { return &steady{pods: pods, base: map[string]members{}} }

// watch takes job's baseline; every member must have a hub pod and a local pod.
func (s *steady) watch(ctx context.Context, job string, size int) error {
	m, err := s.pods.of(ctx, job)
	if err != nil {
		return err
	}
	if len(m) != 2*size {
		return fmt.Errorf("job %s has pods %v, want one hub and one local pod for each of %d members", job, m, size)
	}
	s.mu.Lock()
	s.base[job] = m
	s.mu.Unlock()
	return nil
}

// forget stops watching job (it is about to finish).
func (s *steady) forget(job string) {
	s.mu.Lock()
	delete(s.base, job)
	s.mu.Unlock()
}

func (s *steady) run(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		jobs := maps.Clone(s.base)
		s.mu.Unlock()
		for job, want := range jobs {
			got, err := s.pods.of(ctx, job)
			if err != nil {
				continue // an API server call that failed tells nothing
			}
			s.mu.Lock()
			_, still := s.base[job]
			if still && !maps.Equal(got, want) && len(s.problems) < 20 {
				s.problems = append(s.problems, fmt.Sprintf("%s: job %s has pods [%v], had [%v]",
					time.Now().Format("15:04:05.000"), job, got, want))
			}
			s.mu.Unlock()
		}
		s.mu.Lock()
		s.samples++
		s.mu.Unlock()
	}
}

// report returns the number of samples and the problems seen so far.
func (s *steady) report() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, slices.Clone(s.problems)
}

// describe lists a job's pods on both sides with their phase and reasons,
// for a failure message.
func (f fleetPods) describe(ctx context.Context, job string) string {
	sel := metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job}
	var lines []string
	add := func(side string, cs kubernetes.Interface) {
		l, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, sel)
		if err != nil {
			lines = append(lines, side+": "+err.Error())
			return
		}
		for _, p := range l.Items {
			line := fmt.Sprintf("%s %s/%s %s reason=%q message=%q deleting=%v", side, p.Namespace, p.Name, p.Status.Phase,
				p.Status.Reason, p.Status.Message, p.DeletionTimestamp != nil)
			for _, c := range p.Status.ContainerStatuses {
				if c.State.Terminated != nil {
					line += fmt.Sprintf(" %s terminated %d %s %s", c.Name, c.State.Terminated.ExitCode, c.State.Terminated.Reason, c.State.Terminated.Message)
				}
			}
			lines = append(lines, line)
		}
	}
	events := func(side string, cs kubernetes.Interface) {
		l, err := cs.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, e := range l.Items {
			if strings.Contains(e.InvolvedObject.Name, job) {
				lines = append(lines, fmt.Sprintf("event %s %s %s/%s %s %s: %s", e.LastTimestamp.Format("15:04:05"), side,
					e.InvolvedObject.Namespace, e.InvolvedObject.Name, e.Type, e.Reason, e.Message))
			}
		}
	}
	add("hub", f.hub)
	events("hub", f.hub)
	for name, cs := range f.workloads {
		add(name, cs)
		events(name, cs)
	}
	return strings.Join(lines, "\n")
}
