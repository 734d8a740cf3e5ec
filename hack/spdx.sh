#!/usr/bin/env bash
# hack/spdx.sh [-check] [FILE...]: puts "// SPDX-License-Identifier: Apache-2.0"
# and a blank line at the top of every Go file whose first line is not that
# line: the files named, or, with none, every Go file git knows (tracked or
# untracked, not ignored) outside third_party/ directories (code of others,
# under its own licence). The blank line keeps it out of package docs and
# build constraints. With -check it changes nothing, lists the files that
# lack the line and exits 1 if there are any.
set -euo pipefail
line='// SPDX-License-Identifier: Apache-2.0'
check=0
if [ "${1:-}" = -check ]; then check=1; shift; fi
if [ $# = 0 ]; then
  cd "$(dirname "$0")/.."
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.go' ':(exclude)*third_party/*')
else
  files=("$@")
fi

missing=0
for f in "${files[@]}"; do
  [ -f "$f" ] || continue # deleted but still in the index
  [ "$(head -n 1 "$f")" = "$line" ] && continue
  missing=$((missing + 1))
  if [ $check = 1 ]; then echo "$f"; continue; fi
  tmp=$(mktemp)
  { printf '%s\n\n' "$line"; cat "$f"; } > "$tmp"
  cat "$tmp" > "$f" # keeps the file's mode
  rm -f "$tmp"
done
if [ $check = 1 ] && [ $missing -gt 0 ]; then
  echo "spdx: $missing Go file(s) above lack the line '$line' (hack/spdx.sh adds it)" >&2
  exit 1
fi
exit 0
