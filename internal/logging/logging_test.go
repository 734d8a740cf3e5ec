// SPDX-License-Identifier: Apache-2.0

package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
)

func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	return o, fs.Parse(args)
}

// TestFormats: text is the default, json and text are accepted, any other
// format is refused before anything is applied.
func TestFormats(t *testing.T) {
	o, err := parse(t)
	if err != nil || o.Format() != "text" {
		t.Fatalf("default format %q (err %v), want text", o.Format(), err)
	}
	for _, f := range []string{"json", "text"} {
		o, err := parse(t, "--logging-format="+f)
		if err != nil || o.Format() != f {
			t.Fatalf("--logging-format=%s: format %q, err %v", f, o.Format(), err)
		}
		if errs := logsapi.Validate(o.config, nil, nil); len(errs) > 0 {
			t.Fatalf("--logging-format=%s refused: %v", f, errs)
		}
	}
	o, err = parse(t, "--logging-format=xml")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Apply(); err == nil || !strings.Contains(err.Error(), "Unsupported log format") {
		t.Fatalf("--logging-format=xml applied: %v", err)
	}
}

// TestJSONLinesCarryKeys: with --logging-format=json every line is one JSON
// object with the logger's keys (job, cluster, epoch) as fields.
func TestJSONLinesCarryKeys(t *testing.T) {
	o, err := parse(t, "--logging-format=json", "-v=2")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := logsapi.ValidateAndApplyWithOptions(o.config, &logsapi.LoggingOptions{ErrorStream: &buf, InfoStream: &buf}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logsapi.ResetForTest(nil) })
	klog.Background().WithValues("cluster", "eu1").V(2).Info("Local pod created", "job", "llama", "epoch", 3)
	Flush()
	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line); err != nil {
		t.Fatalf("log line %q is not one JSON object: %v", buf.String(), err)
	}
	for k, want := range map[string]any{"msg": "Local pod created", "cluster": "eu1", "job": "llama", "epoch": float64(3), "v": float64(2)} {
		if line[k] != want {
			t.Errorf("%s = %v, want %v (line %s)", k, line[k], want, buf.String())
		}
	}
}
