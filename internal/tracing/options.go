// SPDX-License-Identifier: Apache-2.0

package tracing

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc/credentials"
)

// Options are the tracing flags of a daemon.
type Options struct {
	// Endpoint is the host:port of the OTLP/gRPC collector; empty turns
	// tracing off.
	Endpoint string
	// SamplingRatio is the share of job attempts (and of root RPC spans)
	// recorded, 0 to 1.
	SamplingRatio float64
	// Insecure sends spans without TLS.
	Insecure bool
	// CAFile, with TLS, is the CA bundle that signed the collector's
	// certificate (default: the system roots).
	CAFile string
}

// NewOptions returns the defaults: tracing off, every attempt sampled once on.
func NewOptions() *Options { return &Options{SamplingRatio: 1} }

// AddFlags adds the tracing flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Endpoint, "tracing-endpoint", o.Endpoint, "host:port of an OpenTelemetry collector receiving OTLP over gRPC; spans of every job attempt and API call go there (\"\": tracing off); see docs/tracing.md")
	fs.Float64Var(&o.SamplingRatio, "tracing-sampling-ratio", o.SamplingRatio, "share of job attempts and API calls traced, 0 to 1 (the hub decides per attempt; agents follow the hub's decision)")
	fs.BoolVar(&o.Insecure, "tracing-insecure", o.Insecure, "send spans to --tracing-endpoint without TLS")
	fs.StringVar(&o.CAFile, "tracing-ca", o.CAFile, "CA bundle that signed the collector's serving certificate (default: the system roots); not with --tracing-insecure")
}

// Validate checks the options; errors name the flag at fault.
func (o *Options) Validate() error {
	if o.SamplingRatio < 0 || o.SamplingRatio > 1 {
		return fmt.Errorf("--tracing-sampling-ratio %v: must be between 0 and 1", o.SamplingRatio)
	}
	if o.Endpoint == "" && (o.Insecure || o.CAFile != "") {
		return errors.New("--tracing-insecure and --tracing-ca need --tracing-endpoint")
	}
	if o.Insecure && o.CAFile != "" {
		return errors.New("--tracing-ca and --tracing-insecure exclude each other")
	}
	return nil
}

// enabled is set while a provider installed by Start is running.
var enabled atomic.Bool

// ratio is the installed sampling ratio, for NewAttempt.
var ratio atomic.Value

// Enabled reports whether this process exports spans.
func Enabled() bool { return enabled.Load() }

// Start installs the global tracer provider exporting to the collector, for
// service (the resource's service.name) with the extra resource
// attributes, and returns the function that flushes and stops it. With no
// endpoint it installs nothing and returns a no-op.
func (o *Options) Start(ctx context.Context, service string, attrs ...attribute.KeyValue) (func(context.Context) error, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Endpoint == "" {
		return func(context.Context) error { return nil }, nil
	}
	opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(o.Endpoint)}
	if o.Insecure {
		opts = append(opts, otlptracegrpc.WithInsecure())
	} else {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if o.CAFile != "" {
			pem, err := os.ReadFile(o.CAFile)
			if err != nil {
				return nil, fmt.Errorf("--tracing-ca: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--tracing-ca %s: no PEM certificate", o.CAFile)
			}
		}
		opts = append(opts, otlptracegrpc.WithTLSCredentials(credentials.NewTLS(cfg)))
	}
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing exporter for %s: %w", o.Endpoint, err)
	}
	res := resource.NewSchemaless(append([]attribute.KeyValue{attribute.String("service.name", service),
		attribute.Int("process.pid", os.Getpid())}, attrs...)...)
	return install(sdktrace.WithBatcher(exp), res, o.SamplingRatio), nil
}

// install makes the provider exporting through export the global one and
// returns its stop function.
func install(export sdktrace.TracerProviderOption, res *resource.Resource, r float64) func(context.Context) error {
	tp := sdktrace.NewTracerProvider(
		export,
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(idGenerator{}),
		sdktrace.WithSampler(sampler{ratio: sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r))}),
	)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	ratio.Store(r)
	enabled.Store(true)
	return func(ctx context.Context) error {
		enabled.Store(false)
		return tp.Shutdown(ctx)
	}
}
