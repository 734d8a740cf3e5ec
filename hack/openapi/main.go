// SPDX-License-Identifier: Apache-2.0

// Command openapi post-processes the OpenAPI (Swagger 2.0) document that
// protoc-gen-openapiv2 writes for the hub's REST face (hack/generate.sh):
//
//	openapi IN OUT
//
// protoc-gen-openapiv2 describes shoal.v1alpha1.Object's json field as
// protobuf bytes (a base64 string); the REST face's marshaler (hub/rest
// marshal.go) carries it as the record itself, an embedded JSON object,
// and this rewrites the document to say so. It also names the document,
// states the authentication (client certificate or bearer token), marks
// the bodies that may be empty as optional, and
// writes it sorted and indented, so that generating twice changes nothing.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// objectDefinition is protoc-gen-openapiv2's name of shoal.v1alpha1.Object.
const objectDefinition = "v1alpha1Object"

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: openapi IN OUT")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "openapi:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if err := rewrite(doc); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	e.SetIndent("", "  ")
	if err := e.Encode(doc); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// rewrite makes the document describe what the REST face serves.
func rewrite(doc map[string]any) error {
	defs, _ := doc["definitions"].(map[string]any)
	obj, _ := defs[objectDefinition].(map[string]any)
	props, _ := obj["properties"].(map[string]any)
	field, _ := props["json"].(map[string]any)
	if field == nil || field["format"] != "byte" {
		return fmt.Errorf("definitions.%s.properties.json is not the bytes field it expects: %v", objectDefinition, field)
	}
	props["json"] = map[string]any{
		"type": "object",
		"description": "The record: an apis/v1alpha1 object (apiVersion, kind, metadata, spec, status) " +
			"as an embedded JSON object (not base64); null when empty. On input (POST /v1/jobs, " +
			"/v1/queues) a JSON object or null; anything else is refused naming the field.",
		"additionalProperties": map[string]any{},
	}
	doc["info"] = map[string]any{
		"title":   "Shoal hub REST API",
		"version": "v1alpha1",
		"description": "The REST/JSON face of the hub's gRPC API (grpc-gateway), served on shoal-hub " +
			"--rest-listen over TLS. Every call is a call of the gRPC method it maps to and needs " +
			"the same credentials (a client certificate of the hub CA, or an OIDC ID token as " +
			"`Authorization: Bearer`) and passes the same authorization table. Streaming methods " +
			"(GET /v1/jobs:watch) answer newline-delimited JSON, one {\"result\": ...} or " +
			"{\"error\": ...} per line. docs/rest.md.",
	}
	optionalBodies(doc)
	doc["schemes"] = []any{"https"}
	doc["securityDefinitions"] = map[string]any{
		"bearer": map[string]any{
			"type": "apiKey", "in": "header", "name": "Authorization",
			"description": "Bearer OIDC ID token (shoal-hub --oidc-issuer-url); or, instead, a TLS client certificate of the hub CA.",
		},
	}
	doc["security"] = []any{map[string]any{"bearer": []any{}}}
	return nil
}

// optionalBodies marks as optional the bodies that are what is left of a
// request once its path parameters are taken out (definitions named
// <Service><Method>Body, such as POST /v1/jobs/{name}:cancel's): the
// gateway takes an empty body as an empty message there, and
// protoc-gen-openapiv2 marks every body required.
func optionalBodies(doc map[string]any) {
	paths, _ := doc["paths"].(map[string]any)
	for _, p := range paths {
		ops, _ := p.(map[string]any)
		for _, op := range ops {
			params, _ := op.(map[string]any)["parameters"].([]any)
			for _, param := range params {
				pm, _ := param.(map[string]any)
				schema, _ := pm["schema"].(map[string]any)
				ref, _ := schema["$ref"].(string)
				if pm["in"] == "body" && strings.HasSuffix(ref, "Body") {
					pm["required"] = false
				}
			}
		}
	}
}
