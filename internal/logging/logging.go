// SPDX-License-Identifier: Apache-2.0

// Package logging gives Shoal's daemons the logging flags of Kubernetes
// components (k8s.io/component-base/logs): --logging-format (text, the
// default, or json), -v, --vmodule (text only) and --log-flush-frequency.
package logging

import (
	"github.com/spf13/pflag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // the json format
	"k8s.io/klog/v2"
)

// Options is the logging configuration the flags fill.
type Options struct {
	config *logsapi.LoggingConfiguration
}

// NewOptions returns the default configuration: text format, verbosity 0.
func NewOptions() *Options {
	return &Options{config: logsapi.NewLoggingConfiguration()}
}

// AddFlags adds the logging flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	logsapi.AddFlags(o.config, fs)
	logs.AddFlags(fs, logs.SkipLoggingConfigurationFlags())
	// The alpha options need a feature gate the daemons do not offer.
	for _, name := range []string{"log-json-info-buffer-size", "log-json-split-stream", "log-text-info-buffer-size", "log-text-split-stream"} {
		_ = fs.MarkHidden(name)
	}
}

// Format is the configured format (text or json).
func (o *Options) Format() string { return o.config.Format }

// Apply validates the configuration and installs the logger behind klog.
// Call it once, after the flags are parsed and before the daemon logs.
func (o *Options) Apply() error {
	return logsapi.ValidateAndApply(o.config, nil)
}

// Flush writes buffered log entries; call it before the process exits.
func Flush() {
	logs.FlushLogs()
	klog.Flush()
}
