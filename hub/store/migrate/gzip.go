// SPDX-License-Identifier: Apache-2.0

package migrate

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
)

// Some records are stored gzipped (the registry's inventories): their
// version is the first field of the compressed JSON.

func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("gunzip stored record: %w", err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("gunzip stored record: %w", err)
	}
	return out, nil
}

// gunzipHead decompresses the first n bytes only (fewer if the record is shorter).
func gunzipHead(b []byte, n int) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("gunzip stored record: %w", err)
	}
	head := make([]byte, n)
	m, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, fmt.Errorf("gunzip stored record: %w", err)
	}
	return head[:m], nil
}

// stampGzip stamps a gzipped record. A record its codec stamped before
// compressing (the cheap way) is returned as it is; any other is
// decompressed, stamped and compressed again.
func (s Schema) stampGzip(raw []byte) ([]byte, error) {
	head, err := gunzipHead(raw, len(prefix)+20)
	if err != nil {
		return nil, err
	}
	want := strconv.AppendInt(append([]byte(nil), prefix...), int64(s.Version()), 10)
	if rest, ok := bytes.CutPrefix(head, want); ok && len(rest) > 0 && (rest[0] == ',' || rest[0] == '}') {
		return raw, nil
	}
	plain, err := gunzip(raw)
	if err != nil {
		return nil, err
	}
	if plain, err = s.Stamp(plain); err != nil {
		return nil, err
	}
	return Gzip(plain)
}

// Gzip compresses a stamped record the way the hub stores big records.
func Gzip(plain []byte) ([]byte, error) {
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	if _, err := w.Write(plain); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
