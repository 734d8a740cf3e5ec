#!/usr/bin/env bash
# make images: builds the release images of shoal-hub and shoal-agent for
# linux/amd64 and linux/arm64 without Docker — static binaries
# (CGO_ENABLED=0) in one layer each, non-root, OCI labels — as OCI image
# layouts under _output/images/<name>/ and archives <name>.oci.tar, then
# verifies them (hack/imagetool verify: platforms, user, entrypoint, ELF
# architecture, labels). Knobs: IMAGE_ARCHES="amd64 arm64", VERSION.
# Load one into a node's containerd: ctr -n k8s.io images import --platform linux/amd64 _output/images/shoal-agent.oci.tar
set -euo pipefail
cd "$(dirname "$0")/.."

arches=${IMAGE_ARCHES:-amd64 arm64}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
out=_output/images
mkdir -p "$out/bin"
ca=()
[ -r /etc/ssl/certs/ca-certificates.crt ] && ca=(-ca-certificates /etc/ssl/certs/ca-certificates.crt)

go build -o "$out/bin/imagetool" ./hack/imagetool
for name in shoal-hub shoal-agent; do
	bins=()
	for arch in $arches; do
		echo "images: building $name linux/$arch ($version)"
		mkdir -p "$out/bin/$arch"
		CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath \
			-ldflags "-s -w -X main.version=$version" -o "$out/bin/$arch/$name" "./cmd/$name"
		bins+=(-bin "$arch=$out/bin/$arch/$name")
	done
	echo "images: writing $out/$name (OCI layout) and $out/$name.oci.tar"
	"$out/bin/imagetool" build -name "$name" -version "$version" -revision "$revision" -out "$out/$name" "${ca[@]}" "${bins[@]}"
	echo "images: verifying $name"
	"$out/bin/imagetool" verify -name "$name" -version "$version" -arches "$(tr ' ' , <<<"$arches")" "$out/$name"
done
