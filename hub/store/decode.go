// SPDX-License-Identifier: Apache-2.0

package store

import (
	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// decodeOptions make go-json-experiment/json decode as encoding/json does
// (names in any case, duplicate names, invalid UTF-8, durations as
// nanoseconds, the types' UnmarshalJSON methods): the package documents
// jsonv2.Unmarshal with them as semantically identical to encoding/json's
// Unmarshal.
var decodeOptions = jsonv1.DefaultOptionsV1()

// DecodeJSON decodes a stored record's JSON into v as encoding/json's
// Unmarshal does, in less time: records are written by encoding/json
// (JSONCodec.Marshal) and read with go-json-experiment/json's decoder,
// which does not scan a record twice (encoding/json checks it whole before
// decoding it) and allocates a quarter of the objects
// (BenchmarkDecodeJob). Decoding stored records (watch events, reads,
// lists) was a quarter of the hub's CPU at 100,000 jobs (docs/scale.md).
// An agent's inventory report is read with it too: it is stored as sent.
func DecodeJSON(b []byte, v any) error { return jsonv2.Unmarshal(b, v, decodeOptions) }
