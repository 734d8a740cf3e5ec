// SPDX-License-Identifier: Apache-2.0

package store

import "encoding/json"

// Codec turns objects into stored bytes and back.
type Codec[T any] interface {
	Marshal(T) ([]byte, error)
	Unmarshal([]byte) (T, error)
}

// JSONCodec encodes objects with encoding/json and decodes them with
// DecodeJSON.
func JSONCodec[T any]() Codec[T] { return jsonCodec[T]{} }

type jsonCodec[T any] struct{}

func (jsonCodec[T]) Marshal(obj T) ([]byte, error) { return json.Marshal(obj) }

func (jsonCodec[T]) Unmarshal(b []byte) (T, error) {
	var obj T
	err := DecodeJSON(b, &obj)
	return obj, err
}
