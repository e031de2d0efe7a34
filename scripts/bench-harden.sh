#!/bin/sh
# What `harden` costs a launch (BENCHMARKS.md, issue 25): `cli-sandbox step -- /bin/true` with
# `harden = true` and `harden = false`, ROUNDS rounds alternating, in a scratch home at HOME_DIR
# (default /home/clisb-bench, made and removed here; run as root, or pass a folder you own).
# Usage: scripts/bench-harden.sh [CLI_SANDBOX [ROUNDS [HOME_DIR]]]
set -eu
B=${1:-target/release/cli-sandbox}
ROUNDS=${2:-40}
H=${3:-/home/clisb-bench}
W=$(mktemp -d)
trap 'rm -rf "$W" "$H"' EXIT
mkdir -p "$W/s" "$W/d" "$H"
for f in .bashrc .profile .gitconfig .claude.json; do echo x > "$H/$f"; done
for d in .config .local/share work .ssh .claude .codex .gemini .pi .cursor .cache .npm; do mkdir -p "$H/$d"; done
printf '[policy]\nharden = true\n' > "$W/on.toml"
printf '[policy]\n' > "$W/off.toml"
HOME=$H AGENTWORKS_STATE_ROOT=$W/s AGENTWORKS_WORKSPACE_DOCS=$W/d python3 - "$B" "$ROUNDS" "$W" <<'PY'
import json, statistics, subprocess, sys, time
b, rounds, w = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for c in ("on", "off"):
    p = json.loads(subprocess.run([b, "--config", f"{w}/{c}.toml", "profile", "--backend", "landlock", "--chat", "c1", "--json"], capture_output=True, check=True).stdout)
    p = p.get("plan", p)
    print(f"harden {c}: {len(p['landlock']['rules'])} Landlock rules, {len(p['namespaces']['mounts'])} mounts")
t = {"on": [], "off": []}
for _ in range(rounds):
    for c in ("on", "off"):
        s = time.perf_counter()
        subprocess.run([b, "--config", f"{w}/{c}.toml", "step", "--chat", "c1", "--", "/bin/true"], capture_output=True, check=True)
        t[c].append(time.perf_counter() - s)
for c in t:
    print(f"harden {c}: median {statistics.median(t[c]) * 1000:.2f} ms, min {min(t[c]) * 1000:.2f} ms")
print(f"ratio on/off: median {statistics.median(t['on']) / statistics.median(t['off']):.2f}, min {min(t['on']) / min(t['off']):.2f}")
PY
