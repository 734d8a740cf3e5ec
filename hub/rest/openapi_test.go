// SPDX-License-Identifier: Apache-2.0

package rest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"sigs.k8s.io/yaml"

	_ "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1" // registers the services
)

// rules are the HTTP rules of rest.yaml.
type rules struct {
	Type          string `json:"type"`
	ConfigVersion int    `json:"config_version"`
	HTTP          struct {
		Rules []map[string]string `json:"rules"`
	} `json:"http"`
}

// TestOpenAPIDescribesTheRules: every HTTP rule names a method the protos
// declare and is in the OpenAPI document under its path and verb, as
// operation Service_Method; the document describes Object.json as an
// embedded object, not base64 bytes.
func TestOpenAPIDescribesTheRules(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "apis", "proto", "shoal", "v1alpha1", "rest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var r rules
	if err := yaml.UnmarshalStrict(b, &r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths       map[string]map[string]struct{ OperationID string } `json:"paths"`
		Definitions map[string]struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if len(r.HTTP.Rules) == 0 {
		t.Fatal("rest.yaml has no rules")
	}
	ops := 0
	for _, op := range doc.Paths {
		ops += len(op)
	}
	if ops != len(r.HTTP.Rules) {
		t.Errorf("the document has %d operations, rest.yaml %d rules", ops, len(r.HTTP.Rules))
	}
	for _, rule := range r.HTTP.Rules {
		sel := rule["selector"]
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(sel))
		if err != nil {
			t.Errorf("rule %s: no such method: %v", sel, err)
			continue
		}
		m := d.(protoreflect.MethodDescriptor)
		found := false
		for _, verb := range []string{"get", "post", "put", "delete", "patch"} {
			path, ok := rule[verb]
			if !ok {
				continue
			}
			found = true
			// The document writes a multi-segment variable {v=**} as {v}
			// with a pattern.
			path = strings.ReplaceAll(path, "=**}", "}")
			op, ok := doc.Paths[path][verb]
			want := string(m.Parent().Name()) + "_" + string(m.Name())
			if !ok || op.OperationID != want {
				t.Errorf("rule %s: %s %s is %q in the document, want operation %s", sel, strings.ToUpper(verb), path, op.OperationID, want)
			}
		}
		if !found {
			t.Errorf("rule %s has no verb", sel)
		}
	}
	field := doc.Definitions["v1alpha1Object"].Properties["json"]
	if field["type"] != "object" || field["format"] != nil {
		t.Errorf("the document describes Object.json as %v, want an embedded object", field)
	}
}
