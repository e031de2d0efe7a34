#!/usr/bin/env bash
# The benchmark table of BENCHMARKS.md, in one command (Linux; benchmarks never run in CI).
#
#   scripts/bench.sh                 the full table (about 5 minutes on 2 cores)
#   scripts/bench.sh --quick         fewer rounds (about 2 minutes), for a look
#   scripts/bench.sh --criterion     also the criterion benchmarks of the compile step
#   scripts/bench.sh --baseline [NAME=]BIN  also time another cli-sandbox (e.g. one built from
#                                    main) in the same rounds: before/after a change; repeatable
#   scripts/bench.sh --phases NAME=BIN  also the table of where the time goes for another
#                                    phase-times build (cargo build --features phase-times)
#
# Other options go to the table: --rounds N, --cli-rounds N, --only launch,compile,cli,memory,phases,past,
# --keep. Needs bubblewrap for the comparison (apt-get install bubblewrap) and the pinned CLIs
# for their rows (npm ci --prefix tests); each is left out, loudly, when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

criterion=0
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --criterion) criterion=1 ;;
    --baseline | --phases)
      case "$2" in
        *=*) args+=("$1" "${2%%=*}=$(realpath "${2#*=}")") ;;
        *) args+=("$1" "$(realpath "$2")") ;;
      esac
      shift ;;
    *) args+=("$1") ;;
  esac
  shift
done

# The binary as users get it: `cargo bench` would build it with the dev-dependencies' features
# unified in, so the release builds are copied aside first and the table times those copies.
# Four builds: the one the table measures, static against musl (the install recipe of the README:
# no dynamic loader and none of glibc's start at each launch); the same code static against glibc
# and the plain `cargo build --release` one (dynamic), timed in the same rounds as baselines; and
# a musl one with the `phase-times` feature, whose marks make the table of where the time goes.
host=$(rustc -vV | sed -n 's/^host: //p')
musl="${host%%-*}-unknown-linux-musl"
if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx "$musl"; then
  echo "bench.sh: the Rust target $musl is missing: rustup target add $musl" >&2
  exit 2
fi
# Each build's two binaries (`cli-sandbox` and the helper alone, `cli-sandbox-helper`, which a
# launch runs when it lies beside the first) go to a folder of their own.
static_build() { # TARGET [CARGO OPTIONS]
  local target=$1
  shift
  RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" cargo build --release --locked \
    -p cli-sandbox --bin cli-sandbox --bin cli-sandbox-helper --target "$target" \
    --target-dir target/static "$@"
}
keep_build() { # FROM TO
  mkdir -p "$2"
  cp "$1/cli-sandbox" "$1/cli-sandbox-helper" "$2/"
}
static_build "$musl"
keep_build "target/static/$musl/release" target/bench/static
static_build "$musl" --features phase-times
keep_build "target/static/$musl/release" target/bench/phases
static_build "$host"
keep_build "target/static/$host/release" target/bench/static-glibc
cargo build --release --locked -p cli-sandbox --bin cli-sandbox --bin cli-sandbox-helper
keep_build target/release target/bench/dynamic
args=(--baseline "static glibc=$PWD/target/bench/static-glibc/cli-sandbox"
  --baseline "dynamic=$PWD/target/bench/dynamic/cli-sandbox"
  --phases "this build=$PWD/target/bench/phases/cli-sandbox" "${args[@]}")

if [ "$criterion" = 1 ]; then
  cargo bench --locked -p launch --bench compile
fi
cargo bench --locked -p cli-sandbox --bench launch -- --binary "$PWD/target/bench/static/cli-sandbox" "${args[@]}"
