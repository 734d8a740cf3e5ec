// SPDX-License-Identifier: Apache-2.0

package migrate

import (
	"bytes"
	"encoding/json"
	"fmt"

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
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	var status map[string]json.RawMessage
	if len(obj["status"]) == 0 {
		return raw, nil
	}
	if err := json.Unmarshal(obj["status"], &status); err != nil {
		return nil, fmt.Errorf("status: %w", err)
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
	var err error
	if status["members"], err = json.Marshal(members); err != nil {
		return nil, err
	}
	if obj["status"], err = json.Marshal(status); err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// unmarshalField decodes m[key] into v when it is there.
func unmarshalField(m map[string]json.RawMessage, key string, v any) error {
	if raw, ok := m[key]; ok {
		return json.Unmarshal(raw, v)
	}
	return nil
}
