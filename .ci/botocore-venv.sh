#!/usr/bin/env bash
# The Python virtual environment with pinned botocore that
# tests/aws_adaptive_botocore.rs drives: created on first use, reused after
# (under target/, git-ignored). Prints the path of its python on stdout.
# RETRYSIM_BOTOCORE_VENV overrides where it lives.
set -euo pipefail
BOTOCORE_VERSION=1.43.67
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${RETRYSIM_BOTOCORE_VENV:-$root/target/venv-botocore}"
py="$dir/bin/python"
if [ -x "$py" ] && "$py" -c "import sys, botocore; sys.exit(botocore.__version__ != '$BOTOCORE_VERSION')" 2>/dev/null; then
  echo "$py"
  exit 0
fi
python3 -m venv "$dir" >&2
"$py" -m pip install --quiet --disable-pip-version-check "botocore==$BOTOCORE_VERSION" >&2
"$py" -c "import botocore; assert botocore.__version__ == '$BOTOCORE_VERSION', botocore.__version__" >&2
echo "$py"
