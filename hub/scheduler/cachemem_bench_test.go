// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// BenchmarkCachedJobBytes reports the heap one cached job holds (bytes/job,
// after a collection), as the job cache decodes it (jobCodec), for a
// pending job of the scale harness's shape and for a placed 8-member one
// with its status's members and placement:
//
//	go test ./hub/scheduler -run '^$' -bench CachedJobBytes -benchtime 1x
func BenchmarkCachedJobBytes(b *testing.B) {
	pending := testjob.New("j").Queue("scale").Members(8).GPUs(8).Command("sleep", "3600").Obj()
	pending.Status = v1alpha1.JobStatus{Phase: v1alpha1.JobPending, Owner: "admin",
		Conditions: []metav1.Condition{{Type: v1alpha1.JobConditionPlaced, Status: metav1.ConditionFalse,
			Reason: "InsufficientGPUs", Message: "needs 8×8 GPUs; 0 are free on matching nodes"}}}
	placed := pending.DeepCopy()
	placed.Status.Phase, placed.Status.Epoch = v1alpha1.JobPlaced, 1
	placed.Status.Conditions[0] = metav1.Condition{Type: v1alpha1.JobConditionPlaced, Status: metav1.ConditionTrue,
		Reason: "Placed", Message: "8 members on h100-7 in rack r03"}
	placed.Status.Placement = &v1alpha1.PlacementStatus{Clusters: []string{"h100-7"}, Domain: "h100-7/rack:r03"}
	for i := range 8 {
		placed.Status.Members = append(placed.Status.Members, v1alpha1.MemberStatus{Index: int32(i), Cluster: "h100-7",
			Node: fmt.Sprintf("n%04d", i), Namespace: "shoal-scale", Domain: "h100-7/rack:r03", Phase: v1alpha1.MemberPending})
	}
	placed.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}
	// whole decodes the job as stored, for comparison: what the cache held
	// before it kept only what a cycle reads.
	whole := func(raw []byte) (any, error) {
		var j v1alpha1.Job
		return &j, json.Unmarshal(raw, &j)
	}
	cached := func(raw []byte) (any, error) { return jobCodec{}.Unmarshal(raw) }
	for name, j := range map[string]*v1alpha1.Job{"pending": pending, "placed": placed} {
		for codec, decode := range map[string]func([]byte) (any, error){"cache": cached, "whole": whole} {
			b.Run(name+"/"+codec, func(b *testing.B) { benchDecoded(b, j, decode) })
		}
	}
}

// benchDecoded keeps n decodings of j and reports the heap they hold.
func benchDecoded(b *testing.B, j *v1alpha1.Job, decode func([]byte) (any, error)) {
	const n = 20_000
	raw, err := json.Marshal(j)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		keep := make([]any, n)
		before := heapNow()
		for i := range keep {
			if keep[i], err = decode(raw); err != nil {
				b.Fatal(err)
			}
		}
		after := heapNow()
		runtime.KeepAlive(keep)
		b.ReportMetric(float64(after-before)/n, "bytes/job")
		b.ReportMetric(float64(len(raw)), "stored-bytes/job")
	}
}

func heapNow() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
