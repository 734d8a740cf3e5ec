// SPDX-License-Identifier: Apache-2.0

// Package rest is the hub's REST/JSON face: a grpc-gateway reverse proxy
// (generated from apis/proto and the HTTP rules in
// apis/proto/shoal/v1alpha1/rest.yaml into internal/shoalv1alpha1) that
// turns each HTTP call into a call of the hub's own gRPC server, over an
// in-process connection, so that REST calls pass the same authentication,
// authorization table, audit log and metrics as gRPC calls (hub/server).
// Records travel as embedded JSON objects (marshal.go), and the OpenAPI
// document (openapi.json, from hack/generate.sh) says so. docs/rest.md.
package rest
