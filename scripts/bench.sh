#!/usr/bin/env bash
# The benchmark table of BENCHMARKS.md, in one command (Linux; benchmarks never run in CI).
#
#   scripts/bench.sh                 the full table (about 5 minutes on 2 cores)
#   scripts/bench.sh --quick         fewer rounds (about 2 minutes), for a look
#   scripts/bench.sh --criterion     also the criterion benchmarks of the compile step
#   scripts/bench.sh --baseline BIN  also time another cli-sandbox (e.g. one built from main)
#                                    in the same rounds: before/after a change
#
# Other options go to the table: --rounds N, --cli-rounds N, --only launch,compile,cli,memory,
# --keep. Needs bubblewrap for the comparison (apt-get install bubblewrap) and the pinned CLIs
# for their rows (npm ci --prefix tests); each is left out, loudly, when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

criterion=0
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --criterion) criterion=1 ;;
    --baseline) args+=("--baseline" "$(realpath "$2")"); shift ;;
    *) args+=("$1") ;;
  esac
  shift
done

# The binary as users get it: `cargo bench` would build it with the dev-dependencies' features
# unified in, so the release build is copied aside first and the table times that copy.
cargo build --release --locked -p launch --bin cli-sandbox
mkdir -p target/bench
cp target/release/cli-sandbox target/bench/cli-sandbox

if [ "$criterion" = 1 ]; then
  cargo bench --locked -p launch --bench compile
fi
cargo bench --locked -p launch --bench launch -- --binary "$PWD/target/bench/cli-sandbox" "${args[@]}"
