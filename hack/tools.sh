#!/usr/bin/env bash
# Installs the developer tools at pinned versions into $SHOAL_CACHE/tools/bin
# (idempotent): golangci-lint, protoc-gen-go, protoc-gen-go-grpc,
# protoc-gen-grpc-gateway, protoc-gen-openapiv2, controller-gen;
# and Debian's protobuf-compiler when protoc is missing. With the argument `lint`, only
# golangci-lint.
set -euo pipefail
cache=${SHOAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shoal}
bin="$cache/tools/bin"
mkdir -p "$bin"

install() { # name module@version
  local name=$1 pkg=$2 stamp="$bin/.$1.version"
  if [ -x "$bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$pkg" ]; then return; fi
  echo "tools: installing $pkg"
  GOBIN="$bin" GOFLAGS= go install "$pkg"
  echo "$pkg" > "$stamp"
}

install golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
# `hack/tools.sh lint` stops here: the tests need golangci-lint (test/lint), not protoc.
[ "${1:-}" = lint ] && exit 0
install protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
install protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
install protoc-gen-grpc-gateway github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@v2.29.0
install protoc-gen-openapiv2 github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2@v2.29.0
install controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0

if ! command -v protoc >/dev/null 2>&1; then
  echo "tools: installing Debian protobuf-compiler"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get install -y protobuf-compiler >/dev/null 2>&1 || {
    $sudo apt-get update >/dev/null && $sudo apt-get install -y protobuf-compiler >/dev/null; }
fi
