// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"
)

// outFormats are the values of -o/--output of the job and queue commands.
var outFormats = []string{"table", "wide", "yaml", "json"}

// outFlag adds -o/--output (default table) with completion to cmd.
func outFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "output", "o", "table", "output format: "+strings.Join(outFormats, ", "))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outFormats, cobra.ShellCompDirectiveNoFileComp))
}

// outCheck refuses an unknown output format before anything is sent.
func outCheck(format string) error {
	if slices.Contains(outFormats, format) {
		return nil
	}
	return fmt.Errorf("unknown output format %q: use one of %s", format, strings.Join(outFormats, ", "))
}

// outStructured writes v as YAML or JSON and reports true; for the table
// formats it writes nothing and reports false.
func outStructured(w io.Writer, format string, v any) (bool, error) {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return true, err
		}
		_, err = fmt.Fprintln(w, string(b))
		return true, err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = w.Write(b)
		return true, err
	}
	return false, nil
}

// outList is the kubectl-style list object printed by -o yaml|json.
func outList[T any](items []T) map[string]any {
	if items == nil {
		items = []T{}
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
}

// outTable returns a tab writer for aligned columns.
func outTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 3, ' ', 0) }

// outAge is the time since t, kubectl style ("5m", "3d"), or "<unknown>".
func outAge(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// outDash returns s, or "-" when it is empty.
func outDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// outCallError turns an error of a hub call into a message that says what
// was wrong and what to do; what names the call ("submit job/llama").
func outCallError(what string, err error) error {
	st, ok := status.FromError(err)
	if !ok || err == nil {
		return err
	}
	hint := ""
	switch st.Code() {
	case codes.InvalidArgument:
		hint = "fix the fields listed and try again"
	case codes.Aborted:
		hint = "it changed meanwhile: get it again and reapply your change"
	case codes.OutOfRange:
		hint = "the revision is too old: list again and watch from the new revision"
	case codes.DeadlineExceeded:
		hint = "the hub did not answer in time; retry"
	}
	msg := fmt.Sprintf("%s: %s", what, st.Message())
	if hint != "" {
		msg += "\n(" + hint + ")"
	}
	return fmt.Errorf("%s", msg)
}
