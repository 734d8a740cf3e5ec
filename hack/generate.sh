#!/usr/bin/env bash
# make generate: protobuf + gRPC Go code from apis/proto, written beside the
# .proto files, and the deepcopy functions of the API types
# (zz_generated.deepcopy.go in every apis package marked
# +kubebuilder:object:generate=true, by controller-gen object). Every
# generated file starts with the SPDX line (hack/spdx.sh). Running it twice
# changes nothing. The tools come from hack/tools.sh (make tools).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${SHOAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shoal}/tools/bin:$PATH"

protos=$(find apis/proto -name '*.proto' 2>/dev/null | sort)
if [ -n "$protos" ]; then
  protoc -I apis/proto \
    --go_out=apis/proto --go_opt=paths=source_relative \
    --go-grpc_out=apis/proto --go-grpc_opt=paths=source_relative \
    $protos
fi
echo "generate: $(echo "$protos" | grep -c . || true) proto file(s)"

# Remove the old deepcopy files first, so that a package that lost its marker
# or a type does not keep a stale copy.
find apis -name zz_generated.deepcopy.go -delete
# (Not controller-gen's headerFile: it puts the header below //go:build.)
controller-gen object paths=./apis/...
echo "generate: deepcopy for $(find apis -name zz_generated.deepcopy.go | wc -l) package(s)"

mapfile -t generated < <(find apis -name '*.pb.go' -o -name 'zz_generated.*.go' | sort)
[ ${#generated[@]} = 0 ] || hack/spdx.sh "${generated[@]}"
