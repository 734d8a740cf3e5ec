// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// codec stores rollouts as the JSON of v1alpha1.Rollout and still reads the
// records hubs wrote before the Rollout was the stored type (a record
// without metadata and with a "state"); such a record is written back in
// the new form by its next update.
type codec struct{}

var _ store.Codec[*v1alpha1.Rollout] = codec{}

func (codec) Marshal(r *v1alpha1.Rollout) ([]byte, error) { return json.Marshal(r) }

func (codec) Unmarshal(b []byte) (*v1alpha1.Rollout, error) {
	var probe struct {
		Metadata json.RawMessage `json:"metadata"`
		State    json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, err
	}
	if probe.Metadata == nil && probe.State != nil {
		var old legacyRollout
		if err := json.Unmarshal(b, &old); err != nil {
			return nil, err
		}
		return old.rollout(), nil
	}
	r := &v1alpha1.Rollout{}
	if err := json.Unmarshal(b, r); err != nil {
		return nil, err
	}
	return r, nil
}

// legacyRollout is the stored form of a rollout before v1alpha1.Rollout.
type legacyRollout struct {
	Name     string `json:"name"`
	Revision string `json:"revision"`
	Selector string `json:"selector"`
	Waves    string `json:"waves"`
	Spec     struct {
		Commit      string        `json:"commit"`
		Waves       [][]string    `json:"waves"`
		Soak        time.Duration `json:"soak"`
		WaveTimeout time.Duration `json:"waveTimeout"`
	} `json:"spec"`
	State struct {
		Phase       v1alpha1.RolloutPhase `json:"phase"`
		Wave        int                   `json:"wave"`
		WaveStarted time.Time             `json:"waveStarted"`
		GoodSince   map[string]time.Time  `json:"goodSince"`
		Previous    map[string]string     `json:"previous"`
		Message     string                `json:"message"`
	} `json:"state"`
	Paused  bool      `json:"paused"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

func (o *legacyRollout) rollout() *v1alpha1.Rollout {
	r := &v1alpha1.Rollout{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindRollout},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, CreationTimestamp: metav1.NewTime(o.Created)},
		Spec: v1alpha1.RolloutSpec{Revision: o.Spec.Commit, Selector: o.Selector, Waves: o.Waves,
			Soak: metav1.Duration{Duration: o.Spec.Soak}, WaveTimeout: metav1.Duration{Duration: o.Spec.WaveTimeout}, Paused: o.Paused},
		Status: v1alpha1.RolloutStatus{Phase: o.State.Phase, Wave: o.State.Wave, WaveStarted: metav1.NewMicroTime(o.State.WaveStarted),
			Previous: o.State.Previous, Message: o.State.Message, LastUpdateTime: metav1.NewTime(o.Updated)},
	}
	if r.Spec.Revision == "" {
		r.Spec.Revision = o.Revision
	}
	for _, w := range o.Spec.Waves {
		r.Status.Waves = append(r.Status.Waves, v1alpha1.RolloutWave{Clusters: w})
	}
	if o.State.GoodSince != nil {
		r.Status.GoodSince = make(map[string]metav1.MicroTime, len(o.State.GoodSince))
		for c, t := range o.State.GoodSince {
			r.Status.GoodSince[c] = metav1.NewMicroTime(t)
		}
	}
	return r
}
