#!/usr/bin/env bash
# The Python virtual environment with the pinned OpenTelemetry SDK that the
# traced test system (tests/traced_system/) runs in: created on first use,
# reused after (under target/, git-ignored). Prints the path of its python
# on stdout. RETRYSIM_TRACES_VENV overrides where it lives.
set -euo pipefail
PINS=(
  "opentelemetry-api==1.45.2"
  "opentelemetry-sdk==1.45.2"
  "opentelemetry-exporter-otlp-json-file==0.66b1"
)
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${RETRYSIM_TRACES_VENV:-$root/target/venv-traces}"
py="$dir/bin/python"
stamp="$dir/.pins"
want="$(printf '%s\n' "${PINS[@]}")"
if [ -x "$py" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "$py"
  exit 0
fi
python3 -m venv "$dir" >&2
"$py" -m pip install --quiet --disable-pip-version-check "${PINS[@]}" >&2
"$py" -c "import opentelemetry.sdk.trace, opentelemetry.exporter.otlp.json.file" >&2
printf '%s\n' "${PINS[@]}" > "$stamp"
echo "$py"
