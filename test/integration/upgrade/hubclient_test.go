// SPDX-License-Identifier: Apache-2.0

package upgrade_test

import (
	"context"
	"encoding/json"
	"testing"

	"google.golang.org/grpc"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/framework"
)

// hubClient calls the fleet's hub, whichever release it runs, with the
// admin identity shoal-hub wrote into the fleet's CLI config.
type hubClient struct {
	conn     *grpc.ClientConn
	jobs     shoalv1.JobsClient
	queues   shoalv1.QueuesClient
	clusters shoalv1.ClustersClient
}

func dialHub(t *testing.T, configPath string) *hubClient {
	t.Helper()
	conn := framework.DialHub(t, configPath, devfleet.ShoalContext)
	return &hubClient{conn: conn, jobs: shoalv1.NewJobsClient(conn), queues: shoalv1.NewQueuesClient(conn),
		clusters: shoalv1.NewClustersClient(conn)}
}

func (h *hubClient) createQueue(t *testing.T, q *v1alpha1.Queue) {
	t.Helper()
	b, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.queues.Create(t.Context(), &shoalv1.CreateQueueRequest{Queue: &shoalv1.Object{Json: b}}); err != nil {
		t.Fatalf("create queue %s: %v", q.Name, err)
	}
}

func (h *hubClient) submit(t *testing.T, j *v1alpha1.Job) {
	t.Helper()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.jobs.Submit(t.Context(), &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: b}}); err != nil {
		t.Fatalf("submit %s: %v", j.Name, err)
	}
}

func (h *hubClient) cancel(t *testing.T, name string) {
	t.Helper()
	if _, err := h.jobs.Cancel(t.Context(), &shoalv1.CancelJobRequest{Name: name}); err != nil {
		t.Fatalf("cancel %s: %v", name, err)
	}
}

func (h *hubClient) job(ctx context.Context, name string) (*v1alpha1.Job, error) {
	o, err := h.jobs.Get(ctx, &shoalv1.GetJobRequest{Name: name})
	if err != nil {
		return nil, err
	}
	var j v1alpha1.Job
	return &j, json.Unmarshal(o.GetJson(), &j)
}

// listJobs returns every job, by name.
func (h *hubClient) listJobs(ctx context.Context) (map[string]*v1alpha1.Job, error) {
	out := map[string]*v1alpha1.Job{}
	opts := &shoalv1.ListOptions{Limit: 500}
	for {
		resp, err := h.jobs.List(ctx, &shoalv1.ListJobsRequest{Options: opts})
		if err != nil {
			return nil, err
		}
		for _, o := range resp.Items {
			var j v1alpha1.Job
			if err := json.Unmarshal(o.GetJson(), &j); err != nil {
				return nil, err
			}
			out[j.Name] = &j
		}
		if resp.GetMeta().GetContinue() == "" {
			return out, nil
		}
		opts.Continue = resp.Meta.Continue
	}
}

func (h *hubClient) cluster(ctx context.Context, name string) (*v1alpha1.Cluster, error) {
	o, err := h.clusters.GetCluster(ctx, &shoalv1.GetClusterRequest{Name: name})
	if err != nil {
		return nil, err
	}
	var c v1alpha1.Cluster
	return &c, json.Unmarshal(o.GetJson(), &c)
}
