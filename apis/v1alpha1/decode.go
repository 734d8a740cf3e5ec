// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// DecodeError is a document that could not be decoded: malformed YAML or
// JSON, a missing or unknown kind, or fields the type does not have.
//
// +kubebuilder:object:generate=false
type DecodeError struct {
	// Doc is the 1-based index of the document in a multi-document stream.
	Doc int
	// Reasons lists every problem (each unknown field is one).
	Reasons []string
}

// Error names the document and lists the problems.
func (e *DecodeError) Error() string {
	where := "document"
	if e.Doc > 0 {
		where = fmt.Sprintf("document %d", e.Doc)
	}
	return where + ": " + strings.Join(e.Reasons, "; ")
}

// Decode strictly decodes one object from YAML or JSON into a pointer to
// the type its kind names (*Job, *Queue, *Cluster, *JoinToken, *Rollout).
// Unknown and duplicate fields are errors.
func Decode(data []byte) (any, error) {
	jsonData, err := toJSON(data)
	if err != nil {
		return nil, &DecodeError{Reasons: []string{"malformed YAML/JSON: " + err.Error()}}
	}
	var tm metav1.TypeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(jsonData, &tm); err != nil {
		return nil, &DecodeError{Reasons: []string{"not an object: " + err.Error()}}
	}
	if tm.APIVersion != APIVersion {
		return nil, &DecodeError{Reasons: []string{fmt.Sprintf(
			"apiVersion is %q; Shoal objects have apiVersion: %s", tm.APIVersion, APIVersion)}}
	}
	obj := newObject(tm.Kind)
	if obj == nil {
		return nil, &DecodeError{Reasons: []string{fmt.Sprintf(
			"kind %q is not one of %s, %s, %s, %s, %s, %s, %s, %s", tm.Kind, KindJob, KindQueue, KindCluster, KindJoinToken, KindRollout, KindModelVersion, KindInferenceService, KindGPUPool)}}
	}
	if err := strictUnmarshal(jsonData, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// toJSON converts YAML to JSON; JSON objects pass as they are (strict JSON
// decoding catches their duplicate fields), which spares the hub a YAML
// parse of every API request.
func toJSON(data []byte) ([]byte, error) {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return t, nil
	}
	return yaml.YAMLToJSONStrict(data)
}

func newObject(kind string) any {
	switch kind {
	case KindJob:
		return &Job{}
	case KindQueue:
		return &Queue{}
	case KindCluster:
		return &Cluster{}
	case KindJoinToken:
		return &JoinToken{}
	case KindModelVersion:
		return &ModelVersion{}
	case KindRollout:
		return &Rollout{}
	case KindInferenceService:
		return &InferenceService{}
	case KindGPUPool:
		return &GPUPool{}
	}
	return nil
}

// strictUnmarshal decodes JSON into obj, reporting every unknown field with
// its path.
func strictUnmarshal(jsonData []byte, obj any) error {
	strict, err := kjson.UnmarshalStrict(jsonData, obj)
	if err != nil {
		return &DecodeError{Reasons: []string{err.Error()}}
	}
	if len(strict) > 0 {
		reasons := make([]string, 0, len(strict))
		for _, e := range strict {
			reasons = append(reasons, e.Error())
		}
		return &DecodeError{Reasons: reasons}
	}
	return nil
}

// DecodeJob strictly decodes a Job from YAML or JSON.
func DecodeJob(data []byte) (*Job, error) { return decodeAs[Job](data, KindJob) }

// DecodeQueue strictly decodes a Queue from YAML or JSON.
func DecodeQueue(data []byte) (*Queue, error) { return decodeAs[Queue](data, KindQueue) }

// DecodeCluster strictly decodes a Cluster from YAML or JSON.
func DecodeCluster(data []byte) (*Cluster, error) { return decodeAs[Cluster](data, KindCluster) }

// DecodeModelVersion decodes a ModelVersion in YAML or JSON, strictly.
func DecodeModelVersion(data []byte) (*ModelVersion, error) {
	return decodeAs[ModelVersion](data, KindModelVersion)
}

// DecodeInferenceService decodes an InferenceService in YAML or JSON, strictly.
func DecodeInferenceService(data []byte) (*InferenceService, error) {
	return decodeAs[InferenceService](data, KindInferenceService)
}

// DecodeGPUPool decodes a GPUPool in YAML or JSON, strictly.
func DecodeGPUPool(data []byte) (*GPUPool, error) { return decodeAs[GPUPool](data, KindGPUPool) }

func decodeAs[T any](data []byte, kind string) (*T, error) {
	obj, err := Decode(data)
	if err != nil {
		return nil, err
	}
	t, ok := obj.(*T)
	if !ok {
		return nil, &DecodeError{Reasons: []string{fmt.Sprintf("expected kind %s", kind)}}
	}
	return t, nil
}

// DecodeAll strictly decodes every object of a multi-document YAML stream
// ("---" separated) or a JSON document. Empty documents are skipped.
func DecodeAll(r io.Reader) ([]any, error) {
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out []any
	for i := 1; ; i++ {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, &DecodeError{Doc: i, Reasons: []string{err.Error()}}
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			i--
			continue
		}
		obj, err := Decode(doc)
		if err != nil {
			var de *DecodeError
			if errors.As(err, &de) {
				de.Doc = i
			}
			return out, err
		}
		out = append(out, obj)
	}
}

// stripComments drops YAML comment lines, to recognise empty documents.
func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			b.Write(line)
		}
	}
	return b.Bytes()
}
