#!/usr/bin/env bash
# Packages kubectl-sched for krew: builds the binaries (the plugins and their
# kubectl_complete-* completers), archives them for this machine's platform under dist/, and
# writes dist/krew/sched-{whatif,explain,lease}.yaml from
# krew/plugin.yaml.in with one platform entry per archive in dist/ (so archives built on other
# machines, copied into dist/, are listed too).
#
#   krew/package.sh                       # release build
#   PROFILE=dev krew/package.sh           # faster, unoptimised build (for trying it out)
#   KREW_BASE_URL=https://host/releases/v0.1.0 krew/package.sh   # where the archives will live
#
# Install from the local archive, without publishing anything:
#   kubectl krew install --manifest=dist/krew/sched-whatif.yaml --archive=dist/kubectl-sched-v<version>-<os>-<arch>.tar.gz
set -euo pipefail
cd "$(dirname "$0")/.."

profile="${PROFILE:-release}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) echo "package.sh: unsupported OS $(uname -s)" >&2; exit 2 ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "package.sh: unsupported architecture $(uname -m)" >&2; exit 2 ;;
esac
target_dir="target/$([ "$profile" = dev ] && echo debug || echo "$profile")"
bins=(kubectl-sched kubectl-sched_whatif kubectl-sched_explain kubectl-sched_lease
  kubectl_complete-sched_whatif kubectl_complete-sched_explain kubectl_complete-sched_lease)

cargo build --locked --profile "$profile" --bins

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
for b in "${bins[@]}"; do cp "$target_dir/$b" "$stage/"; done
cp README.md "$stage/"
mkdir -p dist/krew
archive="dist/kubectl-sched-v$version-$os-$arch.tar.gz"
tar -C "$stage" -czf "$archive" "${bins[@]}" README.md

base_url="${KREW_BASE_URL:-file://$PWD/dist}"
sha256() { if command -v sha256sum >/dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1; }

write_manifest() { # name bin short description
  local name="$1" bin="$2" short="$3" description="$4" platforms=""
  for a in dist/kubectl-sched-v"$version"-*.tar.gz; do
    local file plat a_os a_arch
    file="$(basename "$a")"
    plat="${file#kubectl-sched-v"$version"-}"
    plat="${plat%.tar.gz}"
    a_os="${plat%-*}"
    a_arch="${plat##*-}"
    platforms+="  - selector:
      matchLabels:
        os: $a_os
        arch: $a_arch
    uri: $base_url/$file
    sha256: $(sha256 "$a")
    bin: $bin
    files:
    - from: $bin
      to: .
    - from: kubectl_complete-${bin#kubectl-}
      to: .
    - from: README.md
      to: .
"
  done
  local out="dist/krew/$name.yaml" template
  template="$(cat krew/plugin.yaml.in)"
  template="${template//@NAME@/$name}"
  template="${template//@BIN@/${bin#kubectl-}}"
  template="${template//@VERSION@/$version}"
  template="${template//@HOMEPAGE@/${KREW_HOMEPAGE:-$base_url}}"
  template="${template//@SHORT@/$short}"
  template="${template//@DESCRIPTION@/$description}"
  template="${template//@PLATFORMS@/${platforms%$'\n'}}"
  printf '%s\n' "$template" | grep -v '^# ' > "$out"
  echo "wrote $out"
}

write_manifest sched-whatif kubectl-sched_whatif "Where would this pod go, and what would it evict?" \
  "kubectl sched-whatif -f pod.yaml places a pod (or a workload's replicas) as kube-scheduler would."
write_manifest sched-explain kubectl-sched_explain "Why is this pod pending, or why did it land there?" \
  "kubectl sched-explain pod/NAME explains a pod beside the real scheduler's last FailedScheduling message."
write_manifest sched-lease kubectl-sched_lease "Who holds each leader-election lease?" \
  "kubectl sched-lease shows leader-election leases and node heartbeats, and how fresh they are."
echo "archive: $archive"
