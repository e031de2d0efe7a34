#!/usr/bin/env bash
# Ordinary work inside a grant (issue 25), side by side: the same chat's work in a guarded grant
# (the namespace plan with its FUSE guard: /dev/fuse mode 0666), the same grant unguarded (the
# namespace plan with the grant bound and stand-ins only: /dev/fuse 0600, so the plan has no
# guard) and bare (the same user, no sandbox). Interleaved: each round runs the three modes one
# after the other, so that the machine's load falls on all three alike. Root only (it changes
# /dev/fuse's mode and puts it back); needs git, make and cc.
#
#   scripts/guard-work-bench.sh BIN USER [ROUNDS] [REPO_FILES] [FILES]
#
# The work, timed inside the chat (the launch is not counted; scripts/guard-bench.sh measures it):
#   git1   `git status` in a repository of REPO_FILES files, the first in the chat
#   git    `git status` again (the mean of 3)
#   make   a clean build of a C project of 40 files with make (-j1)
#   files  FILES files of 100 bytes written, read, stat'ed and removed
# Prints each round's seconds, then per task the median of the rounds and the ratios to bare.
set -euo pipefail
bin=$(realpath "$1"); user=$2; rounds=${3:-5}; repo_files=${4:-3000}; files=${5:-10000}
for tool in git make cc python3; do
  command -v "$tool" >/dev/null || { echo "guard-work-bench: $tool is missing" >&2; exit 2; }
done
dir=$(mktemp -d); chmod 755 "$dir"
mode=$(stat -c %a /dev/fuse)
trap 'chmod "$mode" /dev/fuse; rm -rf "$dir"' EXIT
grant=$dir/d/workflows/wf1
mkdir -p "$dir/s" "$grant/repo" "$grant/cproj"
# The repository: REPO_FILES files in folders of 50, committed.
python3 - "$grant/repo" "$repo_files" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "src", "d%03d" % (i // 50))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d.txt" % i), "w") as f:
        f.write(("line %d\n" % i) * 20)
PY
# The C project: 40 sources and a Makefile.
python3 - "$grant/cproj" <<'PY'
import os, sys
root = sys.argv[1]
objs = []
for i in range(40):
    with open(os.path.join(root, "m%02d.c" % i), "w") as f:
        f.write('#include <stdio.h>\n#include <string.h>\n')
        f.write('int f%02d(int x) { char b[64]; snprintf(b, sizeof b, "%%d", x); return (int)strlen(b) + %d; }\n' % (i, i))
    objs.append("m%02d.o" % i)
with open(os.path.join(root, "main.c"), "w") as f:
    f.write("".join("int f%02d(int);\n" % i for i in range(40)))
    f.write("int main(void) { int s = 0;\n" + "".join("s += f%02d(%d);\n" % (i, i) for i in range(40)) + "return s == 0; }\n")
with open(os.path.join(root, "Makefile"), "w") as f:
    f.write("OBJS = main.o " + " ".join(objs) + "\n")
    f.write("prog: $(OBJS)\n\tcc -o $@ $(OBJS)\n%.o: %.c\n\tcc -O1 -c -o $@ $<\nclean:\n\trm -f prog $(OBJS)\n")
PY
cat > "$dir/work.py" <<'PY'
import os, subprocess, sys, time
grant, n = sys.argv[1], int(sys.argv[2])
env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_OPTIONAL_LOCKS="0")
def timed(argv, cwd):
    t = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t
repo = os.path.join(grant, "repo")
git1 = timed(["git", "status", "--porcelain"], repo)
git = sum(timed(["git", "status", "--porcelain"], repo) for _ in range(3)) / 3
cproj = os.path.join(grant, "cproj")
subprocess.run(["make", "-s", "clean"], cwd=cproj, check=True, stdout=subprocess.DEVNULL)
make = timed(["make", "-s", "-j1", "prog"], cproj)
d = os.path.join(grant, "many"); os.makedirs(d, exist_ok=True)
t = time.perf_counter()
for i in range(n):
    with open(os.path.join(d, "f%d" % i), "w") as f: f.write("x" * 100)
for i in range(n):
    with open(os.path.join(d, "f%d" % i)) as f: f.read()
for name in os.listdir(d): os.stat(os.path.join(d, name))
for i in range(n): os.unlink(os.path.join(d, "f%d" % i))
files = time.perf_counter() - t
print("git1 %.3f git %.3f make %.3f files %.3f" % (git1, git, make, files))
PY
chown -R "$user" "$dir"
as_user() { su -s /bin/sh "$user" -c "cd $dir && HOME=$dir $*"; }
as_user "git -C $grant/repo init -q && git -C $grant/repo add -A && git -C $grant/repo -c user.name=b -c user.email=b@b commit -qm r && git -C $grant/repo status --porcelain >/dev/null"
confined() {
  as_user "$bin --state-root $dir/s --workspace-docs $dir/d step --chat c1 --grant $grant:rw -- $*"
}
out=$dir/results
for r in $(seq "$rounds"); do
  for m in guard unguarded bare; do
    case $m in
      guard) chmod 666 /dev/fuse; line=$(confined /usr/bin/python3 "$dir/work.py" "$grant" "$files") ;;
      unguarded) chmod 600 /dev/fuse; line=$(confined /usr/bin/python3 "$dir/work.py" "$grant" "$files") ;;
      bare) line=$(as_user /usr/bin/python3 "$dir/work.py" "$grant" "$files") ;;
    esac
    echo "round $r $m: $line"
    echo "$m $line" >> "$out"
  done
done
python3 - "$out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    parts = line.split()
    m, vals = parts[0], dict(zip(parts[1::2], map(float, parts[2::2])))
    for k, v in vals.items(): rows.setdefault(k, {}).setdefault(m, []).append(v)
print("task   guard      unguarded  bare       guard/bare unguarded/bare guard/unguarded")
for k, by in rows.items():
    med = {m: statistics.median(v) for m, v in by.items()}
    g, u, b = med["guard"], med["unguarded"], med["bare"]
    print("%-6s %-10.3f %-10.3f %-10.3f %-10.2f %-14.2f %.2f" % (k, g, u, b, g / b, u / b, g / u))
PY
