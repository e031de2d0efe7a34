#!/usr/bin/env python3
"""Times commands in interleaved rounds: the per-round differences with the first one.

    scripts/exec-rounds.py ROUNDS NAME=COMMAND [NAME=COMMAND ...]

Each round runs every command once, in a shuffled order, with posix_spawn and waitpid (stdin and
stdout on /dev/null), and takes the wall time of each. It prints, per command, the median time
and the median of its per-round differences with the first command, p25 to p75 in brackets.
COMMAND is split on spaces. A benchmark, not a test: BENCHMARKS.md uses it to time the `exec` of
binaries whose plans differ in format (each given a plan it compiled itself), which
`cargo bench -p cli-sandbox --bench launch` cannot run side by side:

    scripts/exec-rounds.py 400 "unshare=/usr/bin/unshare -U -m -p -f --map-root-user /bin/true" \\
        "old=OLD/cli-sandbox exec --policy OLD-PLAN -- /bin/true" \\
        "new=NEW/cli-sandbox-helper exec --policy NEW-PLAN -- /bin/true"
"""
import os
import random
import statistics
import sys
import time


def main():
    rounds = int(sys.argv[1])
    variants = []
    for arg in sys.argv[2:]:
        name, command = arg.split("=", 1)
        variants.append((name, command.split()))
    null = os.open("/dev/null", os.O_RDWR)
    actions = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1)]

    def once(argv):
        start = time.perf_counter_ns()
        pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
        _, status = os.waitpid(pid, 0)
        took = (time.perf_counter_ns() - start) / 1e6
        if status != 0:
            sys.exit(f"{' '.join(argv)} failed: wait status {status}")
        return took

    for _, argv in variants:  # warm the caches
        once(argv)
    times = {name: [] for name, _ in variants}
    for _ in range(rounds):
        order = list(variants)
        random.shuffle(order)
        for name, argv in order:
            times[name].append(once(argv))
    first = variants[0][0]

    def quantile(xs, q):
        xs = sorted(xs)
        return xs[int(q * (len(xs) - 1))]

    for name, _ in variants:
        diffs = [a - b for a, b in zip(times[name], times[first])]
        print(
            f"{name:16} median {statistics.median(times[name]):6.3f} ms  vs {first}: "
            f"{statistics.median(diffs):+.3f} [{quantile(diffs, 0.25):+.3f}, {quantile(diffs, 0.75):+.3f}]"
        )


if __name__ == "__main__":
    main()
