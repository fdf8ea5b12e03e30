#!/usr/bin/env bash
# Remove only what crashed dcrepro runs left behind (never a broad `mn -c` or killall).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
exec .venv/bin/dcrepro clean "$@"
