// SPDX-License-Identifier: Apache-2.0

// Package grpctest serves a gRPC server over an in-memory connection for
// tests that call a service through a real client and transport.
package grpctest

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// Serve serves g over an in-memory listener and returns a client
// connection to it; both stop when t ends.
func Serve(t testing.TB, g *grpc.Server) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient("passthrough:///bufconn", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// Answer serves a bidirectional stream as an echoing fake does: each
// request gets answer's response, in order, until the client closes its
// side (OK) or the stream breaks.
func Answer[Req, Resp any](stream grpc.BidiStreamingServer[Req, Resp], answer func(*Req) *Resp) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(answer(req)); err != nil {
			return err
		}
	}
}
