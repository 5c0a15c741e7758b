#!/usr/bin/env bash
# Gets llama.cpp's real chat templates (models/templates/*.jinja) for the template conformance
# test, from the llama.cpp source bundle inside the node-llama-cpp npm package (the same bundle
# ../shared/anchors/build-llamacpp.sh builds from). Test data only: never part of tandem.
#   fetch-templates.sh [DEST=build/testdata/chat-templates]
# Uses, in order: DEST if already filled, /tmp/llcpp (the anchor build's checkout), the npm
# package in /tmp/anchor, or `npm pack` of node-llama-cpp@3.21.1 (needs npm's registry).
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST="${1:-build/testdata/chat-templates}"
VERSION=3.21.1
if compgen -G "$DEST/*.jinja" >/dev/null; then
  echo "fetch-templates: $DEST already has $(ls "$DEST"/*.jinja | wc -l) templates"
  exit 0
fi
mkdir -p "$DEST"
copy_from_checkout() {
  cp "$1"/models/templates/*.jinja "$DEST"/
  echo "fetch-templates: $(ls "$DEST"/*.jinja | wc -l) templates from $1 into $DEST"
}
if compgen -G "/tmp/llcpp/models/templates/*.jinja" >/dev/null; then
  copy_from_checkout /tmp/llcpp
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bundle=/tmp/anchor/node_modules/node-llama-cpp/llama/gitRelease.bundle
if [ ! -f "$bundle" ]; then
  command -v npm >/dev/null || { echo "fetch-templates: no npm, no llama.cpp bundle" >&2; exit 1; }
  (cd "$work" && npm pack --silent "node-llama-cpp@$VERSION" >/dev/null)
  tar -xzf "$work"/node-llama-cpp-"$VERSION".tgz -C "$work" package/llama/gitRelease.bundle
  bundle="$work/package/llama/gitRelease.bundle"
fi
git clone -q --no-checkout "$bundle" "$work/llama.cpp"
git -C "$work/llama.cpp" checkout -q HEAD -- models/templates
copy_from_checkout "$work/llama.cpp"
