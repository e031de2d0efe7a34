#!/usr/bin/env python3
"""What freezing the blocked programs' folders costs a namespace-plan launch (issue 25).

The namespace plan's Landlock ruleset used to be one rule, the open rights on `/`. It now freezes
the folders of the blocked programs and their ancestors (`/usr/bin`, `/usr`, `/`): one rule for
each other entry there, opened and added by the helper at every launch. This times the same
helper, in interleaved rounds, on the plan as compiled and on the same plan with its Landlock
rules put back to the one rule on `/` (everything else equal), and prints the medians side by
side. Linux, namespaces allowed; benchmarks never run in CI.

    cargo build --release -p cli-sandbox
    scripts/bench-frozen-folders.py [--rounds N] [--bin target/release/cli-sandbox]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--bin", default="target/release/cli-sandbox")
    args = parser.parse_args()
    binary = os.path.realpath(args.bin)
    home = tempfile.mkdtemp(prefix="bench-frozen-")
    grant = os.path.join(home, ".local/share/AgentWorks/workspace-docs/workflows/wf")
    os.makedirs(grant)
    env = dict(os.environ, HOME=home)
    for name in ["XDG_DATA_HOME", "AGENTWORKS_STATE_ROOT", "AGENTWORKS_WORKSPACE_DOCS"]:
        env.pop(name, None)
    planned = json.loads(
        subprocess.run(
            [binary, "plan", "--json", "--cli", "claude", "--chat", "bench", "--grant", grant + ":rw"],
            env=env, check=True, capture_output=True, text=True,
        ).stdout
    )
    argv = planned["argv"]
    helper, plan_file = argv[0], argv[3]
    plan = json.load(open(plan_file))
    rules = plan["landlock"]["rules"]
    open_rights = max((r["rights"] for r in rules), key=len)
    before = json.loads(json.dumps(plan))
    before["landlock"]["rules"] = [{"path": "/", "rights": open_rights}] + [
        r for r in rules if r["rights"] == ["resolve_unix"]
    ]
    before_file = plan_file + ".one-rule.json"
    json.dump(before, open(before_file, "w"))
    os.makedirs(planned["cwd"], exist_ok=True)

    times = {"frozen": [], "one rule": []}
    files = {"frozen": plan_file, "one rule": before_file}
    for _ in range(args.rounds):
        for name, path in files.items():
            start = time.perf_counter()
            subprocess.run([helper, "exec", "--policy", path, "--", "/bin/true"],
                           env=env, cwd=planned["cwd"], check=True)
            times[name].append((time.perf_counter() - start) * 1000)
    one = statistics.median(times["one rule"])
    frozen = statistics.median(times["frozen"])
    print(f"rules: {len(rules)} (frozen) vs {len(before['landlock']['rules'])} (one rule on /)")
    print(f"| plan | median ms ({args.rounds} interleaved rounds) |")
    print("|---|---|")
    print(f"| one rule on / (before) | {one:.2f} |")
    print(f"| blocked folders frozen | {frozen:.2f} |")
    print(f"added: {frozen - one:+.2f} ms, ratio {frozen / one:.2f}")


if __name__ == "__main__":
    main()
