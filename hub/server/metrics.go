// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

var (
	grpcRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shoal_hub_grpc_requests_total",
		Help: "gRPC requests handled by the hub. method: Service/Method; code: the gRPC status code (OK, NotFound, …).",
	}, []string{"method", "code"})
	grpcDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "shoal_hub_grpc_request_duration_seconds",
		Help:    "Latency of the hub's gRPC requests (streams: their whole life). method: Service/Method.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"method"})
)

// RegisterMetrics registers the server's metrics on reg; registering again is not an error.
func RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{grpcRequests, grpcDuration} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return err
			}
		}
	}
	return nil
}

func observeRPC(method string, start time.Time, err error) {
	m := shortMethod(method)
	grpcRequests.WithLabelValues(m, status.Code(err).String()).Inc()
	grpcDuration.WithLabelValues(m).Observe(time.Since(start).Seconds())
}

// observeUnary is the outermost unary interceptor: it gives the handler a
// logger with the method, converts errors once and records metrics.
func observeUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("method", shortMethod(info.FullMethod)))
	resp, err := handler(ctx, req)
	err = toStatus(ctx, info.FullMethod, err)
	observeRPC(info.FullMethod, start, err)
	return resp, err
}

func observeStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	ctx := klog.NewContext(ss.Context(), klog.FromContext(ss.Context()).WithValues("method", shortMethod(info.FullMethod)))
	err := handler(srv, &wrappedStream{ServerStream: ss, ctx: ctx})
	err = toStatus(ctx, info.FullMethod, err)
	observeRPC(info.FullMethod, start, err)
	return err
}
