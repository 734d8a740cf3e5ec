// SPDX-License-Identifier: Apache-2.0

package migrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// jobMemberNamespaces migrates a job from version 1 to 2: version 2 records
// in status.members[].namespace the hub-cluster namespace of each member's
// hub pod. Every release so far put them in the namespace of the member's
// cluster (v1alpha1.ClusterNamespace), so a member with a cluster and no
// namespace gets that one; a member without a cluster has no pod yet.
func jobMemberNamespaces(raw []byte) ([]byte, error) {
	if !bytes.Contains(raw, []byte(`"members"`)) {
		return raw, nil // no member: nothing to fill, skip the decoding
	}
	obj, status, err := statusOf(raw)
	if err != nil || status == nil {
		return raw, err
	}
	if len(status["members"]) == 0 {
		return raw, nil
	}
	var members []map[string]json.RawMessage
	if err := json.Unmarshal(status["members"], &members); err != nil {
		return nil, fmt.Errorf("status.members: %w", err)
	}
	changed := false
	for i, m := range members {
		var cluster, ns string
		if err := unmarshalField(m, "cluster", &cluster); err != nil {
			return nil, fmt.Errorf("status.members[%d].cluster: %w", i, err)
		}
		if err := unmarshalField(m, "namespace", &ns); err != nil {
			return nil, fmt.Errorf("status.members[%d].namespace: %w", i, err)
		}
		if cluster == "" || ns != "" {
			continue
		}
		m["namespace"], _ = json.Marshal(v1alpha1.ClusterNamespace(cluster))
		changed = true
	}
	if !changed {
		return raw, nil
	}
	if status["members"], err = json.Marshal(members); err != nil {
		return nil, err
	}
	if obj["status"], err = json.Marshal(status); err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// jobSubmitTimeMicro migrates a job from version 2 to 3: version 3 keeps
// status.submitTime to the microsecond (metav1.MicroTime, RFC 3339 with
// six digits of fraction); earlier ones wrote whole seconds, which
// MicroTime does not read. A time with whole seconds gets a zero
// fraction: the same instant. A release before 3 reads the new form
// (metav1.Time reads a fraction and drops it), so the field keeps its
// meaning both ways.
func jobSubmitTimeMicro(raw []byte) ([]byte, error) {
	if !bytes.Contains(raw, []byte(`"submitTime"`)) {
		return raw, nil
	}
	obj, status, err := statusOf(raw)
	if err != nil || status == nil {
		return raw, err
	}
	var at string
	if err := unmarshalField(status, "submitTime", &at); err != nil {
		return nil, fmt.Errorf("status.submitTime: %w", err)
	}
	if at == "" {
		return raw, nil
	}
	if _, err := time.Parse(metav1.RFC3339Micro, at); err == nil {
		return raw, nil // already in the new form
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return nil, fmt.Errorf("status.submitTime: %w", err)
	}
	if status["submitTime"], err = json.Marshal(t.UTC().Format(metav1.RFC3339Micro)); err != nil {
		return nil, err
	}
	if obj["status"], err = json.Marshal(status); err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// statusOf splits a job's JSON into its top-level fields and those of its
// status (nil when it has none).
func statusOf(raw []byte) (obj, status map[string]json.RawMessage, err error) {
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, nil, err
	}
	if len(obj["status"]) == 0 {
		return obj, nil, nil
	}
	if err := json.Unmarshal(obj["status"], &status); err != nil {
		return nil, nil, fmt.Errorf("status: %w", err)
	}
	return obj, status, nil
}

// unmarshalField decodes m[key] into v when it is there.
func unmarshalField(m map[string]json.RawMessage, key string, v any) error {
	if raw, ok := m[key]; ok {
		return json.Unmarshal(raw, v)
	}
	return nil
}
