#!/usr/bin/env bash
# Builds the Kubernetes binaries the local fleet and the integration tests use
# (kube-apiserver, kube-scheduler, kube-controller-manager, kubelet at K8S_VERSION, kwok
# at KWOK_VERSION, etcd at ETCD_VERSION, containerd, its runc shim, ctr and
# CoreDNS for real nodes) from the tools modules under test/tools into $SHOAL_CACHE/bin.
# Skips every binary already built at the pinned version. Cold: ~20 min on 2 cores.
set -euo pipefail

K8S_VERSION=v1.37.2
KWOK_VERSION=v0.8.0
ETCD_VERSION=v3.7.3
CONTAINERD_VERSION=v2.4.2
COREDNS_VERSION=v1.15.0
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${SHOAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shoal}
bin="$cache/bin"
mkdir -p "$bin"

stamp() { echo "$1" > "$bin/.$2.version"; }
fresh() { [ -x "$bin/$1" ] && [ "$(cat "$bin/.$1.version" 2>/dev/null)" = "$2" ]; }

build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
major=${K8S_VERSION#v}; major=${major%%.*}
minor=${K8S_VERSION#v*.}; minor=${minor%%.*}
ldflags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
  ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=$build_date -X $p.gitCommit=release-$K8S_VERSION"
done

progress() { # prints elapsed time every 30 s while a build runs
  local what=$1 start=$SECONDS
  while sleep 30; do echo "  ... still building $what ($((SECONDS - start))s)"; done
}

build() { # name module-dir package version [ldflags] [tags]
  local name=$1 dir=$2 pkg=$3 version=$4 flags=${5:-} tags=${6:-}
  if fresh "$name" "$version"; then echo "k8s-bin: $name $version up to date"; return; fi
  echo "k8s-bin: building $name $version (cold builds take minutes)"
  local start=$SECONDS
  progress "$name" & local pp=$!
  trap "kill $pp 2>/dev/null || true" RETURN
  (cd "$root/test/tools/$dir" && CGO_ENABLED=0 go build -trimpath -tags "$tags" -ldflags "-s -w $flags" -o "$bin/$name.tmp" "$pkg")
  mv "$bin/$name.tmp" "$bin/$name"
  stamp "$version" "$name"
  echo "k8s-bin: built $name in $((SECONDS - start))s"
}

build kube-apiserver k8s k8s.io/kubernetes/cmd/kube-apiserver "$K8S_VERSION" "$ldflags"
build kube-scheduler k8s k8s.io/kubernetes/cmd/kube-scheduler "$K8S_VERSION" "$ldflags"
build kube-controller-manager k8s k8s.io/kubernetes/cmd/kube-controller-manager "$K8S_VERSION" "$ldflags"
# The real-node fleet profile runs kubelets on containerd (docs/real-nodes.md).
build kubelet k8s k8s.io/kubernetes/cmd/kubelet "$K8S_VERSION" "$ldflags"
# +shoal.1: easycel patched for concurrent stage initialisation (test/tools/kwok/third_party)
build kwok kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION+shoal.1"
build etcd etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
# Real nodes (docs/real-nodes.md): containerd v2 (kubelet 1.37 needs the CRI
# RuntimeConfig call that containerd 1.x lacks; Debian ships 1.6), its runc
# shim and ctr for image imports, and CoreDNS with the cluster-DNS plugins.
ctrd_tags="no_btrfs no_devmapper no_zfs"
ctrd_flags="-X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION"
build containerd containerd github.com/containerd/containerd/v2/cmd/containerd "$CONTAINERD_VERSION" "$ctrd_flags" "$ctrd_tags"
build containerd-shim-runc-v2 containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 "$CONTAINERD_VERSION" "$ctrd_flags" "$ctrd_tags"
build ctr containerd github.com/containerd/containerd/v2/cmd/ctr "$CONTAINERD_VERSION" "$ctrd_flags" "$ctrd_tags"
build coredns coredns . "$COREDNS_VERSION"

# KWOK needs stage configs; copy the ones its module ships.
stages="$cache/kwok-stages"
if [ ! -f "$stages/.version" ] || [ "$(cat "$stages/.version")" != "$KWOK_VERSION" ]; then
  moddir=$(cd "$root/test/tools/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  rm -rf "$stages" && mkdir -p "$stages"
  cp "$moddir"/kustomize/stage/node/fast/node-initialize.yaml "$stages/"
  for f in pod-create pod-ready pod-complete pod-delete pod-init-container-running pod-init-container-completed; do
    cp "$moddir/kustomize/stage/pod/general/$f.yaml" "$stages/"
  done
  chmod u+w "$stages"/*.yaml
  echo "$KWOK_VERSION" > "$stages/.version"
fi
echo "k8s-bin: binaries in $bin"
