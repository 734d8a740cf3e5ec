// SPDX-License-Identifier: Apache-2.0

package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/internal/tracing"
	"github.com/shoal-dev/shoal/test/framework"
)

// TestTraceOfASplitGang starts shoal-hub and two shoal-agents as processes,
// each agent on a KWOK cluster of one 8-GPU HGX H100 node, all exporting
// to an in-process OTLP receiver; submits a gang of two 8-GPU members,
// which must split over both clusters, and checks the attempt's span
// tree: one trace, the job attempt at its root, the hub's submit,
// schedule (queue wait, decision), book, prepare, commit and running under
// it, each member's prepare, commit and running from its cluster's agent
// under the hub's span of the same phase, and spans from three processes.
func TestTraceOfASplitGang(t *testing.T) {
	skipShort(t)
	recv := framework.StartOTLPReceiver(t)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "200") // export within 0.2 s (ms), inherited by the processes
	bins := *buildShoal(t)
	flags := []string{"--tracing-endpoint=" + recv.Addr, "--tracing-insecure", "--tracing-sampling-ratio=1"}
	bins.HubArgs, bins.AgentArgs = flags, flags
	cli := buildCLI(t)
	f, err := devfleet.Up(t.Context(), devfleet.Options{Dir: t.TempDir(), Clusters: 2, Profiles: []string{"hgx-h100"}, Nodes: 1,
		Out: testWriter{t}, DieWithParent: true, Shoal: &bins})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop() })
	run := cliRunner(t, cli, f)
	run("", "queue", "create", "metrics")
	run(strings.Replace(jobManifest("split", 2), "    gpusPerMember: 8\n", "    gpusPerMember: 8\n  placement:\n    maxClusters: 2\n", 1),
		"job", "submit", "-f", "-")
	waitJobPhase(t, run, "split", v1alpha1.JobRunning)
	var j v1alpha1.Job
	if err := json.Unmarshal([]byte(run("", "job", "get", "split", "-o", "json")), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Status.Placement.Clusters) != 2 {
		t.Fatalf("the gang went to %v, want two clusters", j.Status.Placement.Clusters)
	}
	a, ok := tracing.AttemptOf(j.Annotations)
	if !ok || !a.Root.IsSampled() {
		t.Fatalf("job annotations %v: no sampled %s", j.Annotations, v1alpha1.AnnotationTraceParent)
	}
	traceID, rootID := a.Root.TraceID().String(), a.Root.SpanID().String()

	// Every span, the agents' running ones last, is sent within the batch
	// delay of its end.
	want := map[string]int{tracing.SpanAttempt: 1, tracing.PhaseSubmit: 1, tracing.PhaseSchedule: 1, tracing.PhaseQueueWait: 1,
		tracing.PhaseDecide: 1, tracing.PhaseBook: 1, tracing.PhasePrepare: 1, tracing.PhaseCommit: 1, tracing.PhaseRunning: 1,
		tracing.MemberPrepare: 2, tracing.MemberCommit: 2, tracing.MemberRunning: 2}
	var spans []framework.Span
	count := func() map[string]int {
		n := map[string]int{}
		for _, s := range spans {
			n[s.Name]++
		}
		return n
	}
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		spans = recv.Trace(traceID)
		n := count()
		for name, c := range want {
			if n[name] < c {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("trace %s: spans %v, want %v:\n%s", traceID, count(), want, dumpSpans(spans))
	}
	if n := count(); fmt.Sprint(n) != fmt.Sprint(want) {
		t.Errorf("trace %s: spans %v, want exactly %v:\n%s", traceID, n, want, dumpSpans(spans))
	}

	byID := map[string]framework.Span{}
	byName := map[string][]framework.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
		byName[s.Name] = append(byName[s.Name], s)
	}
	root := byName[tracing.SpanAttempt][0]
	if root.SpanID != rootID || root.ParentID != "" || root.Failed {
		t.Errorf("root %+v: want span %s without parent, not failed", root, rootID)
	}
	parents := map[string]string{
		tracing.PhaseSubmit: tracing.SpanAttempt, tracing.PhaseSchedule: tracing.SpanAttempt,
		tracing.PhaseQueueWait: tracing.PhaseSchedule, tracing.PhaseDecide: tracing.PhaseSchedule,
		tracing.PhaseBook: tracing.SpanAttempt, tracing.PhasePrepare: tracing.SpanAttempt,
		tracing.PhaseCommit: tracing.SpanAttempt, tracing.PhaseRunning: tracing.SpanAttempt,
		tracing.MemberPrepare: tracing.PhasePrepare, tracing.MemberCommit: tracing.PhaseCommit, tracing.MemberRunning: tracing.PhaseRunning,
	}
	epoch := fmt.Sprint(j.Status.Epoch)
	processes := map[string]bool{}
	for _, s := range spans {
		processes[s.Resource["service.name"]+"/"+s.Resource["process.pid"]] = true
		if s.Attrs[string(tracing.KeyJob)] != "split" {
			t.Errorf("span %s: job %q, want split", s.Name, s.Attrs[string(tracing.KeyJob)])
		}
		if s.Name != tracing.PhaseSubmit && s.Attrs[string(tracing.KeyEpoch)] != epoch {
			t.Errorf("span %s: epoch %q, want %s", s.Name, s.Attrs[string(tracing.KeyEpoch)], epoch)
		}
		if s.EndNano < s.StartNano || s.Failed {
			t.Errorf("span %s: start %d end %d failed %v (%s)", s.Name, s.StartNano, s.EndNano, s.Failed, s.Error)
		}
		if s.Name == tracing.SpanAttempt {
			continue
		}
		p, ok := byID[s.ParentID]
		if !ok || p.Name != parents[s.Name] {
			t.Errorf("span %s: parent %s (%s), want %s", s.Name, s.ParentID, p.Name, parents[s.Name])
		}
		hub := !strings.HasPrefix(s.Name, "member.")
		if svc := s.Resource["service.name"]; hub && svc != "shoal-hub" || !hub && svc != "shoal-agent" {
			t.Errorf("span %s from service %q", s.Name, svc)
		}
	}
	if root.StartNano > byName[tracing.PhaseSubmit][0].StartNano || root.EndNano < byName[tracing.PhaseRunning][0].EndNano {
		t.Errorf("root [%d, %d] does not cover submit to running", root.StartNano, root.EndNano)
	}
	for _, name := range []string{tracing.MemberPrepare, tracing.MemberCommit, tracing.MemberRunning} {
		clusters, members := map[string]bool{}, map[string]bool{}
		for _, s := range byName[name] {
			c := s.Attrs[string(tracing.KeyCluster)]
			if c == "" || s.Resource[string(tracing.KeyCluster)] != c {
				t.Errorf("span %s: cluster %q from the agent of %q", name, c, s.Resource[string(tracing.KeyCluster)])
			}
			clusters[c], members[s.Attrs[string(tracing.KeyMember)]] = true, true
		}
		if len(clusters) != 2 || !members["0"] || !members["1"] {
			t.Errorf("%s spans: clusters %v members %v, want both clusters and members 0 and 1", name, clusters, members)
		}
	}
	if len(processes) < 3 {
		t.Errorf("spans from %v, want the hub and both agents", processes)
	}
}

func dumpSpans(spans []framework.Span) string {
	sort.Slice(spans, func(i, j int) bool { return spans[i].StartNano < spans[j].StartNano })
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "%s %s parent=%s %s %v %v\n", s.Name, s.SpanID, s.ParentID, s.Resource["service.name"], s.Attrs, s.Error)
	}
	return b.String()
}
