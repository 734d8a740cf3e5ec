// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// indexed is a stored job whose filter fields are decoded and whose full
// decoding waits until a filter matches: most of a job's bytes are its
// pod template, which a filtered list or a count never needs.
type indexed struct {
	raw []byte
	idx jobIndex
}

// jobIndex holds the fields List and ActiveJobs filter on, and those
// retention decides on.
type jobIndex struct {
	Metadata struct {
		CreationTimestamp *metav1.Time      `json:"creationTimestamp"`
		Labels            map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Queue                   string `json:"queue"`
		TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished"`
	} `json:"spec"`
	Status struct {
		Owner          string            `json:"owner"`
		Phase          v1alpha1.JobPhase `json:"phase"`
		CompletionTime *metav1.Time      `json:"completionTime"`
		Placement      *struct {
			Clusters []string `json:"clusters"`
		} `json:"placement"`
		Members []struct {
			Cluster string `json:"cluster"`
		} `json:"members"`
	} `json:"status"`
}

// service is the inference service the job is a replica of ("": none).
func (x *jobIndex) service() string { return x.Metadata.Labels[v1alpha1.LabelInferenceService] }

// clusters lists, once each, the clusters of the job's placement and members.
func (x *jobIndex) clusters() []string {
	var out []string
	if p := x.Status.Placement; p != nil {
		out = append(out, p.Clusters...)
	}
	for _, m := range x.Status.Members {
		out = append(out, m.Cluster)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// hasCluster reports whether the job has a member or placement on cluster.
func (x *jobIndex) hasCluster(cluster string) bool {
	if p := x.Status.Placement; p != nil && slices.Contains(p.Clusters, cluster) {
		return true
	}
	for _, m := range x.Status.Members {
		if m.Cluster == cluster {
			return true
		}
	}
	return false
}

// job decodes the whole job.
func (x *indexed) job() (*v1alpha1.Job, error) {
	var j v1alpha1.Job
	if err := store.DecodeJSON(x.raw, &j); err != nil {
		return nil, fmt.Errorf("decode stored job: %w", err)
	}
	return &j, nil
}

// indexCodec reads jobs as *indexed; the collection using it only reads.
type indexCodec struct{}

func (indexCodec) Marshal(x *indexed) ([]byte, error) { return x.raw, nil }

func (indexCodec) Unmarshal(b []byte) (*indexed, error) {
	x := &indexed{raw: b}
	return x, store.DecodeJSON(b, &x.idx)
}

// rawCodec reads jobs as *indexed without decoding their index: for jobs
// picked already (from the list index) that are decoded whole anyway.
type rawCodec struct{}

func (rawCodec) Marshal(x *indexed) ([]byte, error)   { return x.raw, nil }
func (rawCodec) Unmarshal(b []byte) (*indexed, error) { return &indexed{raw: b}, nil }

// newIndexReader is the read-only, lazily decoding view of the jobs.
func newIndexReader(st *store.Store) store.Reader[*indexed] {
	return store.NewReader[*indexed](st, Kind, indexCodec{})
}
