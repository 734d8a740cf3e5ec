package scheduler

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
)

// inventoryCodec reads the registry's inventory records, stored as gzipped
// JSON (plain JSON is read too). The scheduler never writes them.
// TODO: use an exported reader from hub/registry once it has one.
type inventoryCodec[T any] struct{}

var errReadOnly = errors.New("scheduler: inventory records are read-only here")

func (inventoryCodec[T]) Marshal(T) ([]byte, error) { return nil, errReadOnly }

func (inventoryCodec[T]) Unmarshal(data []byte) (T, error) {
	var v T
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		r, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return v, err
		}
		if data, err = io.ReadAll(r); err != nil {
			return v, err
		}
	}
	err := json.Unmarshal(data, &v)
	return v, err
}
