#!/usr/bin/env bash
# make generate: protobuf + gRPC Go code from apis/proto, written beside the .proto files.
set -euo pipefail
cd "$(dirname "$0")/.."
protos=$(find apis/proto -name '*.proto' 2>/dev/null | sort)
[ -n "$protos" ] || { echo "generate: no .proto files"; exit 0; }
protoc -I apis/proto \
  --go_out=apis/proto --go_opt=paths=source_relative \
  --go-grpc_out=apis/proto --go-grpc_opt=paths=source_relative \
  $protos
echo "generate: $(echo "$protos" | wc -l) proto file(s)"
