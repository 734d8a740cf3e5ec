#!/usr/bin/env bash
# Installs the Debian packages real nodes of the local fleet need (runc and
# the CNI plugins bridge, host-local, loopback), once: a no-op when present.
# containerd itself is built from source into $SHOAL_CACHE (make k8s-bin).
# python3 runs the Python client's tests against a real hub (test/integration/rest);
# chromium and chromium-driver, the browser of the web fleet view's test (test/e2e/webui).
set -euo pipefail
pkgs=(runc containernetworking-plugins iproute2 python3 chromium chromium-driver)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "host-deps: ${pkgs[*]} installed"
  exit 0
fi
echo "host-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null || {
  $sudo apt-get update >/dev/null
  $sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
}
echo "host-deps: installed ${missing[*]}"
