// SPDX-License-Identifier: Apache-2.0

package rest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

// objectName is the proto message whose bytes field json holds a record's
// JSON: over REST that field is the record itself, an embedded JSON
// object, not protojson's base64 string.
var objectName = (&shoalv1.Object{}).ProtoReflect().Descriptor().FullName()

// objectMarshaler is the REST face's marshaler: protojson (lowerCamelCase
// field names, every field written, int64 as a string, unknown input
// fields refused), except that every shoal.v1alpha1.Object's json field is
// an embedded JSON object both ways: {"json": {...}, "revision": "12"}.
type objectMarshaler struct {
	*runtime.JSONPb
}

// newObjectMarshaler is the marshaler the gateway serves every media type with.
func newObjectMarshaler() *objectMarshaler {
	return &objectMarshaler{JSONPb: &runtime.JSONPb{
		MarshalOptions: protojson.MarshalOptions{EmitUnpopulated: true},
		// A field the API does not know is refused, never ignored.
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}}
}

// Marshal writes a message, or the gateway's stream chunks
// ({"result": msg} and {"error": status}).
func (m *objectMarshaler) Marshal(v any) ([]byte, error) {
	switch v := v.(type) {
	case proto.Message:
		return m.marshalMessage(v)
	case map[string]any:
		return m.marshalChunk(len(v), func(yield func(string, any)) {
			for k, e := range v {
				yield(k, e)
			}
		})
	case map[string]proto.Message:
		return m.marshalChunk(len(v), func(yield func(string, any)) {
			for k, e := range v {
				yield(k, e)
			}
		})
	}
	return m.JSONPb.Marshal(v)
}

func (m *objectMarshaler) marshalChunk(n int, each func(func(string, any))) ([]byte, error) {
	out := make(map[string]json.RawMessage, n)
	var err error
	each(func(k string, e any) {
		if err != nil {
			return
		}
		var b []byte
		if b, err = m.Marshal(e); err == nil {
			out[k] = b
		}
	})
	if err != nil {
		return nil, err
	}
	return encodeJSON(out)
}

func (m *objectMarshaler) marshalMessage(msg proto.Message) ([]byte, error) {
	b, err := m.MarshalOptions.Marshal(msg)
	if err != nil {
		return nil, err
	}
	tree, err := decodeJSON(b)
	if err != nil {
		return nil, err
	}
	// Re-encoded even without an Object: protojson's output varies its
	// whitespace from build to build on purpose; this is compact and stable.
	if holdsObject(msg.ProtoReflect().Descriptor(), nil) {
		if tree, err = embedObjects(msg.ProtoReflect().Descriptor(), tree); err != nil {
			return nil, err
		}
	}
	return encodeJSON(tree)
}

// Unmarshal reads a message whose Objects carry their records embedded.
func (m *objectMarshaler) Unmarshal(data []byte, v any) error {
	msg, ok := v.(proto.Message)
	if !ok || !holdsObject(msg.ProtoReflect().Descriptor(), nil) {
		return m.JSONPb.Unmarshal(data, v)
	}
	tree, err := decodeJSON(data)
	if err != nil {
		return err
	}
	if tree, err = encodeObjects(msg.ProtoReflect().Descriptor(), tree, ""); err != nil {
		return err
	}
	b, err := encodeJSON(tree)
	if err != nil {
		return err
	}
	return m.UnmarshalOptions.Unmarshal(b, msg)
}

// NewDecoder reads one JSON value per Decode (io.EOF on an empty body,
// which the gateway takes as an empty request).
func (m *objectMarshaler) NewDecoder(r io.Reader) runtime.Decoder {
	d := json.NewDecoder(r)
	return runtime.DecoderFunc(func(v any) error {
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return err
		}
		return m.Unmarshal(raw, v)
	})
}

// NewEncoder writes one value per Encode, each followed by the delimiter.
func (m *objectMarshaler) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := m.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(b, m.Delimiter()...)); err != nil {
			return err
		}
		return nil
	})
}

// holdsObject says whether messages of md can contain an Object.
func holdsObject(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if md.FullName() == objectName {
		return true
	}
	if seen == nil {
		seen = map[protoreflect.FullName]bool{}
	}
	if seen[md.FullName()] {
		return false
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := range fields.Len() {
		if sub := messageOf(fields.Get(i)); sub != nil && holdsObject(sub, seen) {
			return true
		}
	}
	return false
}

// messageOf is the message type of a field's values (a map's values), or nil.
func messageOf(fd protoreflect.FieldDescriptor) protoreflect.MessageDescriptor {
	if fd.IsMap() {
		fd = fd.MapValue()
	}
	if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
		return fd.Message()
	}
	return nil
}

// embedObjects walks the protojson tree of a message of md and replaces
// every Object's base64 json by the JSON it holds (null when empty).
func embedObjects(md protoreflect.MessageDescriptor, v any) (any, error) {
	return walk(md, v, "", func(obj map[string]any, _ string) error {
		s, ok := obj["json"].(string)
		if !ok {
			return nil
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("rest: Object.json is not base64: %w", err)
		}
		if len(raw) == 0 {
			obj["json"] = nil
			return nil
		}
		if !json.Valid(raw) {
			return fmt.Errorf("rest: Object.json holds no valid JSON")
		}
		obj["json"] = json.RawMessage(raw)
		return nil
	})
}

// encodeObjects is embedObjects' inverse on input: an Object's json must be
// a JSON object (or null), which becomes protojson's base64. Errors name
// the field path.
func encodeObjects(md protoreflect.MessageDescriptor, v any, path string) (any, error) {
	return walk(md, v, path, func(obj map[string]any, at string) error {
		j, ok := obj["json"]
		if !ok || j == nil {
			return nil
		}
		if _, isObject := j.(map[string]any); !isObject {
			return &FieldError{Path: join(at, "json"), Reason: "must be a JSON object (the record), not " + jsonKind(j)}
		}
		b, err := encodeJSON(j)
		if err != nil {
			return err
		}
		obj["json"] = base64.StdEncoding.EncodeToString(b)
		return nil
	})
}

// walk calls fn on every Object in the JSON tree v of a message of md.
// Fields are matched by their JSON name and, as protojson accepts on
// input, their proto name.
func walk(md protoreflect.MessageDescriptor, v any, path string, fn func(obj map[string]any, path string) error) (any, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return v, nil
	}
	if md.FullName() == objectName {
		return obj, fn(obj, path)
	}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		sub := messageOf(fd)
		if sub == nil || !holdsObject(sub, nil) {
			continue
		}
		keys := []string{fd.JSONName()}
		if name := string(fd.Name()); name != fd.JSONName() {
			keys = append(keys, name)
		}
		for _, key := range keys {
			val, ok := obj[key]
			if !ok {
				continue
			}
			at := join(path, key)
			var err error
			switch {
			case fd.IsList():
				list, _ := val.([]any)
				for j := range list {
					if list[j], err = walk(sub, list[j], fmt.Sprintf("%s[%d]", at, j), fn); err != nil {
						return nil, err
					}
				}
			case fd.IsMap():
				entries, _ := val.(map[string]any)
				for k := range entries {
					if entries[k], err = walk(sub, entries[k], at+"."+k, fn); err != nil {
						return nil, err
					}
				}
			default:
				if obj[key], err = walk(sub, val, at, fn); err != nil {
					return nil, err
				}
			}
		}
	}
	return obj, nil
}

// FieldError is a request body the REST face refuses, naming the field.
type FieldError struct {
	Path, Reason string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Reason }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case []any:
		return "an array"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// decodeJSON parses JSON keeping numbers exact.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// encodeJSON writes JSON without HTML escaping and without the trailing newline.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
