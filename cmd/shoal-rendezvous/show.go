// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// showList is the --show flag: env:NAME and file:PATH items, in order.
type showList []string

func (s *showList) String() string { return strings.Join(*s, ",") }

func (s *showList) Set(v string) error {
	if !strings.HasPrefix(v, "env:") && !strings.HasPrefix(v, "file:") {
		return fmt.Errorf("want env:NAME or file:PATH, got %q", v)
	}
	*s = append(*s, v)
	return nil
}

// print writes one line per item: `env NAME=value` (`env NAME unset`) or
// `file PATH: content` with the content on one line.
func (s showList) print(w io.Writer) error {
	for _, item := range s {
		if name, ok := strings.CutPrefix(item, "env:"); ok {
			if v, set := os.LookupEnv(name); set {
				fmt.Fprintf(w, "env %s=%s\n", name, v)
			} else {
				fmt.Fprintf(w, "env %s unset\n", name)
			}
			continue
		}
		path := strings.TrimPrefix(item, "file:")
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("--show %s: %w", item, err)
		}
		fmt.Fprintf(w, "file %s: %s\n", path, strings.ReplaceAll(strings.TrimRight(string(b), "\n"), "\n", `\n`))
	}
	return nil
}
