// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

const testToken = "abcdef.0123456789abcdef"

func parse(t *testing.T, args ...string) *options {
	t.Helper()
	o := defaultOptions()
	fs := pflag.NewFlagSet("shoal-agent", pflag.ContinueOnError)
	o.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

func bufLogger(buf *bytes.Buffer) klog.Logger {
	return textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(buf), textlogger.Verbosity(10)))
}

// TestTokenSources: the token comes from --token-file, $SHOAL_JOIN_TOKEN
// or (with a warning) --token; two sources are refused; a missing file
// means no token; the environment variable is unset once read; no
// source logs the token.
func TestTokenSources(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, env string
		args      []string
		want      string
		wantErr   error
		warn      bool
	}{
		{name: "file", args: []string{"--token-file=" + file}, want: testToken},
		{name: "env", env: testToken, want: testToken},
		{name: "deprecated flag", args: []string{"--token=" + testToken}, want: testToken, warn: true},
		{name: "none"},
		{name: "absent file", args: []string{"--token-file=" + file + ".gone"}},
		{name: "file and env", env: testToken, args: []string{"--token-file=" + file}, wantErr: ErrTokenSources},
		{name: "file and flag", args: []string{"--token-file=" + file, "--token=" + testToken}, wantErr: ErrTokenSources},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv(v1alpha1.EnvJoinToken, tt.env)
			}
			o := parse(t, tt.args...)
			var logs bytes.Buffer
			got, err := o.tok.token(bufLogger(&logs))
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) || got != tt.want {
				t.Fatalf("token %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
			if _, set := os.LookupEnv(v1alpha1.EnvJoinToken); set {
				t.Errorf("$%s still set after reading", v1alpha1.EnvJoinToken)
			}
			if strings.Contains(logs.String(), "0123456789abcdef") {
				t.Errorf("the token is in the log: %s", logs.String())
			}
			if warned := strings.Contains(logs.String(), "--token is deprecated"); warned != tt.warn {
				t.Errorf("deprecation warning %v, want %v: %s", warned, tt.warn, logs.String())
			}
		})
	}
	unreadable := t.TempDir() // a directory: exists, but is not a file
	if _, err := parse(t, "--token-file="+unreadable).tok.token(klog.Background()); err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Fatalf("unreadable token file: %v, want an error naming --token-file", err)
	}
}

// TestMetricsEndpointRefusedWhenExposed: /metrics on a non-loopback
// address without TLS and client CA is refused before anything starts;
// loopback, TLS and a health-only address are accepted.
func TestMetricsEndpointRefusedWhenExposed(t *testing.T) {
	if o := defaultOptions(); o.metricsAddr != "127.0.0.1:8080" {
		t.Fatalf("default --metrics-addr %q, want loopback", o.metricsAddr)
	}
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--hub=h:1", "--cluster-name=c", "--metrics-addr=:8080"}, "--metrics-client-ca"},
		{[]string{"--hub=h:1", "--cluster-name=c", "--metrics-addr=0.0.0.0:8080", "--metrics-tls-cert=c", "--metrics-tls-key=k"}, "go together"},
		{[]string{"--hub=h:1", "--cluster-name=c", "--health-listen=8081"}, "--health-listen"},
	}
	for _, tt := range tests {
		_, err := parse(t, tt.args...).config()
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%v: %v, want an error naming %s", tt.args, err, tt.wantErr)
		}
	}
	for _, args := range [][]string{
		{"--metrics-addr=127.0.0.1:0"},
		{"--metrics-addr=[::1]:0"},
		{"--metrics-addr=0.0.0.0:0", "--metrics-tls-cert=c", "--metrics-tls-key=k", "--metrics-client-ca=ca"},
		{"--metrics-addr=", "--health-listen=:8081"},
	} {
		o := parse(t, args...)
		if err := o.endpoints.validate(o.metricsAddr); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}
