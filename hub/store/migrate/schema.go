// SPDX-License-Identifier: Apache-2.0

package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Legacy is the version of a record stored without one.
const Legacy = 1

// Field is the top-level JSON field holding a record's version.
const Field = "storageVersion"

// prefix starts every stamped record.
var prefix = []byte(`{"` + Field + `":`)

// ErrNotObject is returned for a record whose JSON is not an object: there
// is nowhere to put its version.
var ErrNotObject = errors.New("stored record is not a JSON object")

// Step migrates the JSON of a record from one version to the next. It keeps
// every field it does not change, and it is idempotent: a record the
// previous release rewrote without its version may hold the step's fields
// already.
type Step func(raw []byte) ([]byte, error)

// Schema is the stored schema of one kind.
type Schema struct {
	// Steps[i] migrates a record from version i+1 to version i+2.
	Steps []Step
}

// Version is the schema's current version: what its records are written at.
func (s Schema) Version() int { return len(s.Steps) + 1 }

// Stamp returns raw, a JSON object (or a gzipped one), with the schema's
// version as its first field, replacing a version stamped before.
func (s Schema) Stamp(raw []byte) ([]byte, error) {
	if IsGzip(raw) {
		return s.stampGzip(raw)
	}
	body, err := unstamped(raw)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(raw)+len(prefix)+4)
	out = append(out, prefix...)
	out = strconv.AppendInt(out, int64(s.Version()), 10)
	if len(bytes.TrimSpace(body[1:])) > 1 { // more than "}"
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// Upgrade returns the record migrated to the schema's version. A record at
// or above the schema's version comes back as it is. A gzipped record that
// needs a step comes back as plain JSON: a codec that compresses reads its
// plain JSON too.
func (s Schema) Upgrade(raw []byte) ([]byte, error) {
	if len(s.Steps) == 0 {
		return raw, nil // nothing could apply: skip even the version
	}
	from, err := StoredVersion(raw)
	if err != nil || from >= s.Version() {
		return raw, err
	}
	if IsGzip(raw) {
		if raw, err = Gunzip(raw); err != nil {
			return nil, err
		}
	}
	for v := from; v < s.Version(); v++ {
		if raw, err = s.Steps[v-1](raw); err != nil {
			return nil, fmt.Errorf("migrate from version %d to %d: %w", v, v+1, err)
		}
	}
	return raw, nil
}

// StoredVersion is the version raw (JSON or gzipped JSON) was stored at:
// Legacy when it carries none.
func StoredVersion(raw []byte) (int, error) {
	if IsGzip(raw) {
		head, err := gunzipHead(raw, 32)
		if err != nil {
			return 0, err
		}
		raw = head
	}
	rest, ok := bytes.CutPrefix(raw, prefix)
	if !ok {
		return Legacy, nil
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	v, err := strconv.Atoi(string(rest[:n]))
	if err != nil || v < Legacy || n == len(rest) || (rest[n] != ',' && rest[n] != '}') {
		return 0, fmt.Errorf("stored record has a malformed %s: %.40q", Field, raw)
	}
	return v, nil
}

// unstamped returns the object raw without its version field, if any.
func unstamped(raw []byte) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return nil, ErrNotObject
	}
	rest, ok := bytes.CutPrefix(raw, prefix)
	if !ok {
		return raw, nil
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	switch {
	case n < len(rest) && rest[n] == ',':
		return append([]byte{'{'}, rest[n+1:]...), nil
	case n < len(rest) && rest[n] == '}':
		return []byte("{}"), nil
	}
	return nil, fmt.Errorf("stored record has a malformed %s: %.40q", Field, raw)
}
