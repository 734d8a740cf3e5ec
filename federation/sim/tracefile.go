// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Format is the layout of a fleet or workload file.
type Format string

// The file formats.
const (
	// FormatCSV is comma-separated values with a header row (the default).
	FormatCSV Format = "csv"
	// FormatJSONL is one JSON object per line; a mapping's column names are
	// the objects' keys.
	FormatJSONL Format = "jsonl"
)

// row is one record of a file by column name, with its line for errors.
type row struct {
	line   int
	fields map[string]string
}

func (r row) get(col string) string {
	if col == "" {
		return ""
	}
	return strings.TrimSpace(r.fields[col])
}

// rowError names the line and column of a bad value.
type rowError struct {
	line int
	col  string
	err  error
}

func (e *rowError) Error() string {
	if e.col == "" {
		return fmt.Sprintf("line %d: %v", e.line, e.err)
	}
	return fmt.Sprintf("line %d, column %q: %v", e.line, e.col, e.err)
}

func (e *rowError) Unwrap() error { return e.err }

// readRows reads every record of a CSV (header first) or JSON-lines file.
// A CSV file without a header row takes its column names from header.
func readRows(r io.Reader, f Format, delimiter string, header []string) ([]row, []string, error) {
	switch f {
	case "", FormatCSV:
		cr := csv.NewReader(r)
		if delimiter != "" {
			d := []rune(delimiter)
			if len(d) != 1 {
				return nil, nil, fmt.Errorf("delimiter %q: want one character", delimiter)
			}
			cr.Comma = d[0]
		}
		cr.FieldsPerRecord = -1
		cr.Comment = '#'
		if len(header) == 0 {
			var err error
			if header, err = cr.Read(); err != nil {
				return nil, nil, fmt.Errorf("header: %w", err)
			}
		}
		for i := range header {
			header[i] = strings.TrimSpace(strings.TrimPrefix(header[i], "\ufeff"))
		}
		var rows []row
		for {
			rec, err := cr.Read()
			if errors.Is(err, io.EOF) {
				return rows, header, nil
			}
			if err != nil {
				return nil, nil, err
			}
			line, _ := cr.FieldPos(0)
			m := make(map[string]string, len(header))
			for i, h := range header {
				if i < len(rec) {
					m[h] = rec[i]
				}
			}
			rows = append(rows, row{line: line, fields: m})
		}
	case FormatJSONL:
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		var rows []row
		seen := map[string]bool{}
		var header []string
		for line := 1; sc.Scan(); line++ {
			s := strings.TrimSpace(sc.Text())
			if s == "" || strings.HasPrefix(s, "#") {
				continue
			}
			var obj map[string]any
			if err := json.Unmarshal([]byte(s), &obj); err != nil {
				return nil, nil, &rowError{line: line, err: err}
			}
			m := make(map[string]string, len(obj))
			for k, v := range obj {
				if !seen[k] {
					seen[k] = true
					header = append(header, k)
				}
				switch x := v.(type) {
				case nil:
				case string:
					m[k] = x
				case float64:
					m[k] = strconv.FormatFloat(x, 'f', -1, 64)
				case bool:
					m[k] = strconv.FormatBool(x)
				default:
					b, _ := json.Marshal(x)
					m[k] = string(b)
				}
			}
			rows = append(rows, row{line: line, fields: m})
		}
		return rows, header, sc.Err()
	}
	return nil, nil, fmt.Errorf("unknown format %q (want %s or %s)", f, FormatCSV, FormatJSONL)
}

// needColumns fails when a column the mapping names (by mapping field) is not in the file.
func needColumns(header []string, cols map[string]string) error {
	have := map[string]bool{}
	for _, h := range header {
		have[h] = true
	}
	fields := make([]string, 0, len(cols))
	for f := range cols {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, field := range fields {
		if col := cols[field]; col != "" && !have[col] {
			return fmt.Errorf("%s: column %q is not in the file (it has %v)", field, col, header)
		}
	}
	return nil
}
