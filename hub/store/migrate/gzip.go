// SPDX-License-Identifier: Apache-2.0

package migrate

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Some records are stored gzipped (the registry's inventories): their
// version is the first field of the compressed JSON.

// IsGzip reports whether a stored record is gzipped.
func IsGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// gzipWriters and gzipReaders keep compressors and decompressors between
// records: a compressor is about 1 MB of state, and a new one for every
// inventory stored was a twentieth of what the hub allocated in the
// 10-cluster load run (docs/scale.md, "Session 23").
var (
	gzipWriters = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // a valid level: no error
		return w
	}}
	gzipReaders sync.Pool // *gzip.Reader
)

// maxSizeHint bounds the buffer a gzipped record's stated size reserves
// (it is read from the record, checked only as the record decompresses).
const maxSizeHint = 64 << 20

// Gunzip decompresses a gzipped record into a buffer of the size its
// trailer states (the uncompressed size modulo 2³², bounded), with a
// pooled decompressor.
func Gunzip(b []byte) ([]byte, error) {
	var err error
	r, _ := gzipReaders.Get().(*gzip.Reader)
	if r == nil {
		r, err = gzip.NewReader(bytes.NewReader(b))
	} else {
		err = r.Reset(bytes.NewReader(b))
	}
	if err != nil {
		return nil, fmt.Errorf("gunzip stored record: %w", err)
	}
	defer gzipReaders.Put(r)
	hint := 0
	if len(b) >= 18 { // a header of 10 bytes, a trailer of 8
		hint = int(min(binary.LittleEndian.Uint32(b[len(b)-4:]), maxSizeHint))
	}
	out := bytes.NewBuffer(make([]byte, 0, hint+bytes.MinRead)) // ReadFrom wants MinRead spare before EOF
	if _, err := out.ReadFrom(r); err != nil {
		return nil, fmt.Errorf("gunzip stored record: %w", err)
	}
	return out.Bytes(), nil
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
	plain, err := Gunzip(raw)
	if err != nil {
		return nil, err
	}
	if plain, err = s.Stamp(plain); err != nil {
		return nil, err
	}
	return Gzip(plain)
}

// Gzip compresses a stamped record the way the hub stores big records,
// with a pooled compressor.
func Gzip(plain []byte) ([]byte, error) {
	var b bytes.Buffer
	w := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(w)
	w.Reset(&b)
	if _, err := w.Write(plain); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
