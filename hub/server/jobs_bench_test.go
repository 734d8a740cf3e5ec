// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

// BenchmarkSubmitGRPC measures accepted submissions per second through the
// Jobs service (JSON decoding, intake, store write, the error table) from 16
// concurrent clients over an in-memory connection on embedded etcd with
// fsync; TLS and the hub's other interceptors are left out.
func BenchmarkSubmitGRPC(b *testing.B) {
	jc, qc := intakeClients(b)
	ctx := context.Background()
	if _, err := qc.Create(ctx, &shoalv1.CreateQueueRequest{Queue: &shoalv1.Object{Json: []byte(queueJSON)}}); err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64
	const clients = 16
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			name := fmt.Sprintf("job-%07d", seq.Add(1))
			body := strings.Replace(jobJSON, `"name":"llama"`, `"name":"`+name+`"`, 1)
			if _, err := jc.Submit(ctx, &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: []byte(body)}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
