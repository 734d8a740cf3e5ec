// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// legacyRecord is a rollout as hubs stored it before v1alpha1.Rollout was
// the stored type.
const legacyRecord = `{"name":"r1","revision":"2222222222222222222222222222222222222222","selector":"env=prod",` +
	`"waves":"1,100%","spec":{"commit":"2222222222222222222222222222222222222222","waves":[["a"],["b","c"]],` +
	`"soak":60000000000,"waveTimeout":120000000000},"state":{"phase":"Progressing","wave":0,` +
	`"waveStarted":"2026-01-01T00:00:00Z","goodSince":{"a":"2026-01-01T00:00:30Z"},` +
	`"previous":{"a":"1111111","b":"1111111","c":""},"message":"wave 1/2: waiting"},"paused":true,` +
	`"created":"2026-01-01T00:00:00Z","updated":"2026-01-01T00:00:30Z"}`

func TestCodecReadsLegacyRecords(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want := &v1alpha1.Rollout{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindRollout},
		ObjectMeta: metav1.ObjectMeta{Name: "r1", CreationTimestamp: metav1.NewTime(t0)},
		Spec: v1alpha1.RolloutSpec{Revision: "2222222222222222222222222222222222222222", Selector: "env=prod", Waves: "1,100%",
			Soak: metav1.Duration{Duration: time.Minute}, WaveTimeout: metav1.Duration{Duration: 2 * time.Minute}, Paused: true},
		Status: v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutProgressing, Wave: 0, WaveStarted: metav1.NewMicroTime(t0),
			Waves:     []v1alpha1.RolloutWave{{Clusters: []string{"a"}}, {Clusters: []string{"b", "c"}}},
			GoodSince: map[string]metav1.MicroTime{"a": metav1.NewMicroTime(t0.Add(30 * time.Second))},
			Previous:  map[string]string{"a": "1111111", "b": "1111111", "c": ""}, Message: "wave 1/2: waiting",
			LastUpdateTime: metav1.NewTime(t0.Add(30 * time.Second))},
	}
	got, err := codec{}.Unmarshal([]byte(legacyRecord))
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("legacy record read as\n%+v\nwant\n%+v", got, want)
	}
	// Written back in the new form, it reads the same.
	b, err := codec{}.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil || probe["metadata"] == nil || probe["state"] != nil {
		t.Fatalf("rewritten record is not a v1alpha1.Rollout: %s", b)
	}
	again, err := codec{}.Unmarshal(b)
	if err != nil || !equality.Semantic.DeepEqual(again, want) {
		t.Fatalf("new form read as %+v, %v", again, err)
	}
}

// TestStoredWaveTimesKeepSubSeconds: the soak and the wave timeout count
// from stored times, which keep their sub-second part (a soak does not pass
// early because a start time was truncated to the second).
func TestStoredWaveTimesKeepSubSeconds(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 999_000_000, time.UTC)
	r := &v1alpha1.Rollout{Status: v1alpha1.RolloutStatus{WaveStarted: metav1.NewMicroTime(at),
		GoodSince: map[string]metav1.MicroTime{"a": metav1.NewMicroTime(at)}}}
	b, err := codec{}.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := codec{}.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Status.WaveStarted.Time.Equal(at) || !got.Status.GoodSince["a"].Time.Equal(at) {
		t.Fatalf("stored times %s, %s; want %s", got.Status.WaveStarted, got.Status.GoodSince["a"], at)
	}
}
