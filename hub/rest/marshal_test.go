// SPDX-License-Identifier: Apache-2.0

package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

const record = `{"apiVersion":"shoal.dev/v1alpha1","kind":"Job","metadata":{"name":"j <&>"},"spec":{"gang":{"members":2}}}`

// TestObjectsAreEmbedded: Objects (alone, in lists, nested in responses
// and in the stream chunks) carry their record as JSON, not base64.
func TestObjectsAreEmbedded(t *testing.T) {
	m := newObjectMarshaler()
	obj := &shoalv1.Object{Json: []byte(record), Revision: 12}
	for _, tt := range []struct {
		name string
		v    any
		want string
	}{
		{"object", obj, `{"json":` + record + `,"revision":"12"}`},
		{"list", &shoalv1.ListJobsResponse{Items: []*shoalv1.Object{obj, {}}, Meta: &shoalv1.ListMeta{Revision: 3}},
			`{"items":[{"json":` + record + `,"revision":"12"},{"json":null,"revision":"0"}],"meta":{"continue":"","revision":"3"}}`},
		{"nested", &shoalv1.CreateJoinTokenResponse{Token: "t", JoinToken: obj},
			`{"agentCommand":"","caHash":"","joinToken":{"json":` + record + `,"revision":"12"},"token":"t"}`},
		{"stream chunk", map[string]any{"result": &shoalv1.WatchEvent{Type: shoalv1.WatchEvent_ADDED, Object: obj}},
			`{"result":{"more":false,"object":{"json":` + record + `,"revision":"12"},"type":"ADDED"}}`},
		{"error chunk", map[string]proto.Message{"error": status.New(codes.PermissionDenied, "no").Proto()},
			`{"error":{"code":7,"details":[],"message":"no"}}`},
		{"no object", &shoalv1.WhoAmIResponse{User: "u"},
			`{"bindings":[],"groupRecords":[],"method":"","notAfterUnix":"0","oidcGroups":[],"oidcUsername":"","serial":"","user":"u"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := m.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("Marshal:\n got %s\nwant %s", b, tt.want)
			}
		})
	}
}

// TestObjectsAreReadEmbedded: a request's Objects are read from embedded
// JSON (JSON and proto field names); anything but an object or null is
// refused naming the field; unknown fields are refused.
func TestObjectsAreReadEmbedded(t *testing.T) {
	m := newObjectMarshaler()
	var req shoalv1.SubmitJobRequest
	if err := m.Unmarshal([]byte(`{"job":{"json":`+record+`},"dryRun":true}`), &req); err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, req.Job.Json, []byte(record)) || !req.DryRun {
		t.Fatalf("read %s dryRun=%v", req.Job.Json, req.DryRun)
	}
	var upd shoalv1.UpdateQueueRequest
	if err := m.Unmarshal([]byte(`{"queue":{"json":{"kind":"Queue"},"revision":"5"}}`), &upd); err != nil || upd.Queue.Revision != 5 ||
		string(upd.Queue.Json) != `{"kind":"Queue"}` {
		t.Fatalf("read %+v, %v", upd.Queue, err)
	}
	if err := m.Unmarshal([]byte(`{"job":{"json":null}}`), &req); err != nil {
		t.Fatalf("null record: %v", err)
	}
	for body, want := range map[string]string{
		`{"job":{"json":"eyJhIjoxfQ=="}}`: "job.json: must be a JSON object (the record), not a string",
		`{"job":{"json":[1]}}`:            "job.json: must be a JSON object (the record), not an array",
		`{"job":{"json":{}},"dryrun":1}`:  `unknown field "dryrun"`,
	} {
		var r shoalv1.SubmitJobRequest
		err := m.Unmarshal([]byte(body), &r)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	var fe *FieldError
	if err := m.Unmarshal([]byte(`{"job":{"json":true}}`), &req); !errors.As(err, &fe) || fe.Path != "job.json" {
		t.Errorf("a boolean record: %v, want a FieldError at job.json", err)
	}
}

// TestDecoderReadsOneValue: the decoder reads a body, and an empty body
// is io.EOF (an empty request to the gateway).
func TestDecoderReadsOneValue(t *testing.T) {
	m := newObjectMarshaler()
	var req shoalv1.CancelJobRequest
	if err := m.NewDecoder(strings.NewReader("")).Decode(&req); !errors.Is(err, io.EOF) {
		t.Fatalf("empty body: %v, want io.EOF", err)
	}
	if err := m.NewDecoder(strings.NewReader(`{"name":"j"}`)).Decode(&req); err != nil || req.Name != "j" {
		t.Fatalf("decode: %v %q", err, req.Name)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}
