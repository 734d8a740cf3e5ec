// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// BuildPrograms builds the module's commands (e.g. "shoal-hub",
// "shoal-agent": directories under cmd/) into a fresh temporary directory
// and returns it; the caller removes it.
func BuildPrograms(cmds ...string) (string, error) {
	out, err := os.MkdirTemp("", "shoal-bin-")
	if err != nil {
		return "", err
	}
	args := []string{"build", "-o", out + "/"}
	for _, c := range cmds {
		args = append(args, "github.com/shoal-dev/shoal/cmd/"+c)
	}
	if b, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		_ = os.RemoveAll(out)
		return "", fmt.Errorf("go build: %w\n%s", err, b)
	}
	return out, nil
}

// HubAPI is the gRPC API of a fleet's shipped shoal-hub, as its admin.
type HubAPI struct {
	Jobs     shoalv1.JobsClient
	Clusters shoalv1.ClustersClient
	Queues   shoalv1.QueuesClient
}

// NewHubAPI dials the hub of the fleet started with devfleet.ShoalOptions;
// the connection closes when t ends.
func (f *Fleet) NewHubAPI(t testing.TB) *HubAPI {
	t.Helper()
	conn := DialHub(t, f.Shoal.Config, devfleet.ShoalContext)
	return &HubAPI{Jobs: shoalv1.NewJobsClient(conn), Clusters: shoalv1.NewClustersClient(conn), Queues: shoalv1.NewQueuesClient(conn)}
}

// EnsureQueue creates the top-level queue unless it exists.
func (h *HubAPI) EnsureQueue(t testing.TB, name string) {
	t.Helper()
	raw, err := json.Marshal(&v1alpha1.Queue{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Queue"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Queues.Create(t.Context(), &shoalv1.CreateQueueRequest{Queue: &shoalv1.Object{Json: raw}})
	if err != nil && status.Code(err) != codes.AlreadyExists {
		t.Fatalf("create queue %s: %v", name, err)
	}
}

// Submit submits the job and cancels it when the test ends.
func (h *HubAPI) Submit(t testing.TB, j *v1alpha1.Job) {
	t.Helper()
	raw, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Jobs.Submit(t.Context(), &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: raw}}); err != nil {
		t.Fatalf("submit %s: %v", j.Name, err)
	}
	t.Cleanup(func() {
		_, _ = h.Jobs.Cancel(context.Background(), &shoalv1.CancelJobRequest{Name: j.Name})
	})
}

// GetJob reads the job.
func (h *HubAPI) GetJob(ctx context.Context, name string) (*v1alpha1.Job, error) {
	obj, err := h.Jobs.Get(ctx, &shoalv1.GetJobRequest{Name: name})
	if err != nil {
		return nil, err
	}
	var j v1alpha1.Job
	return &j, json.Unmarshal(obj.Json, &j)
}

// WaitJobPhase waits until the job reaches phase and returns it.
func (h *HubAPI) WaitJobPhase(t testing.TB, name string, phase v1alpha1.JobPhase, timeout time.Duration) *v1alpha1.Job {
	t.Helper()
	var j *v1alpha1.Job
	err := wait.PollUntilContextTimeout(t.Context(), PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		cur, err := h.GetJob(ctx, name)
		if err != nil {
			return false, nil
		}
		j = cur
		return j.Status.Phase == phase, nil
	})
	if err != nil {
		var st any
		if j != nil {
			st = j.Status
		}
		t.Fatalf("job %s did not reach %s: %v; status %+v", name, phase, err, st)
	}
	return j
}

// Inventory reads the cluster's inventory as the hub's registry holds it.
func (h *HubAPI) Inventory(ctx context.Context, cluster string) (*fedinv.Cluster, error) {
	obj, err := h.Clusters.GetInventory(ctx, &shoalv1.GetClusterRequest{Name: cluster})
	if err != nil {
		return nil, err
	}
	var inv fedinv.Cluster
	return &inv, json.Unmarshal(obj.Json, &inv)
}

// WaitInventory waits until the cluster's inventory on the hub satisfies ok
// and returns it.
func (h *HubAPI) WaitInventory(t testing.TB, cluster string, timeout time.Duration, ok func(*fedinv.Cluster) bool) *fedinv.Cluster {
	t.Helper()
	var last *fedinv.Cluster
	err := wait.PollUntilContextTimeout(t.Context(), PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		inv, err := h.Inventory(ctx, cluster)
		if err != nil {
			return false, nil
		}
		last = inv
		return ok(inv), nil
	})
	if err != nil {
		t.Fatalf("inventory of %s: %v; last %+v", cluster, err, last)
	}
	return last
}
