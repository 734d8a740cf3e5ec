#!/usr/bin/env bash
# make generate: protobuf + gRPC Go code from apis/proto, written beside the
# .proto files; the REST gateway (grpc-gateway) of the HTTP rules in
# apis/proto/shoal/v1alpha1/rest.yaml into hub/rest/internal/shoalv1alpha1
# and its OpenAPI document hub/rest/openapi.json (post-processed by
# hack/openapi: records are embedded JSON objects); and the deepcopy functions of the API types
# (zz_generated.deepcopy.go in every apis package marked
# +kubebuilder:object:generate=true, by controller-gen object). Every
# generated file starts with the SPDX line (hack/spdx.sh). Running it twice
# changes nothing. The tools come from hack/tools.sh (make tools).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${SHOAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shoal}/tools/bin:$PATH"

# The kustomize bases deploy/hub and deploy/agent are the Helm charts of
# deploy/charts rendered (hack/chartgen; internal/charts.Bases says with
# which values): the charts are their one source.
go run ./hack/chartgen

protos=$(find apis/proto -name '*.proto' 2>/dev/null | sort)
if [ -n "$protos" ]; then
  protoc -I apis/proto \
    --go_out=apis/proto --go_opt=paths=source_relative \
    --go-grpc_out=apis/proto --go-grpc_opt=paths=source_relative \
    $protos
  # The gateway goes into its own package (standalone) under hub/rest, so
  # that apis/ and what imports it (agent, CLI) do not link grpc-gateway.
  rules=apis/proto/shoal/v1alpha1/rest.yaml gwdir=hub/rest/internal/shoalv1alpha1
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  protoc -I apis/proto \
    --grpc-gateway_out="$tmp" --grpc-gateway_opt=paths=source_relative,standalone=true,grpc_api_configuration=$rules \
    --openapiv2_out="$tmp" --openapiv2_opt=grpc_api_configuration=$rules,allow_merge=true,merge_file_name=shoal \
    $protos
  mkdir -p "$gwdir"
  rm -f "$gwdir"/*.pb.gw.go
  mv "$tmp"/shoal/v1alpha1/*.pb.gw.go "$gwdir"/
  go run ./hack/openapi "$tmp/shoal.swagger.json" hub/rest/openapi.json
fi
echo "generate: $(echo "$protos" | grep -c . || true) proto file(s)"

# Remove the old deepcopy files first, so that a package that lost its marker
# or a type does not keep a stale copy.
find apis -name zz_generated.deepcopy.go -delete
# (Not controller-gen's headerFile: it puts the header below //go:build.)
controller-gen object paths=./apis/...
echo "generate: deepcopy for $(find apis -name zz_generated.deepcopy.go | wc -l) package(s)"

mapfile -t generated < <(find apis hub/rest -name '*.pb.go' -o -name '*.pb.gw.go' -o -name 'zz_generated.*.go' | sort)
[ ${#generated[@]} = 0 ] || hack/spdx.sh "${generated[@]}"
