#!/usr/bin/env bash
# README command 1: set up, build, and run tandem's main job on its built-in default model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target tandem
exec build/release/bin/tandem "$@"
