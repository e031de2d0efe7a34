#!/usr/bin/env bash
# The FUSE guard's cost (issue 25), side by side with the stand-ins it replaces: the same binary,
# as an ordinary user, with /dev/fuse mode 0666 (the plan guards the grant) and 0600 (the plan
# has stand-ins only). Root only (it changes /dev/fuse's mode and puts it back).
#
#   scripts/guard-bench.sh BIN USER [LAUNCHES] [FILES]
#
# Per mode: the mean of LAUNCHES launches of `step -- /bin/true` (ms), and the seconds a chat takes
# to write, read, stat and remove FILES files of 100 bytes in its read-write grant.
set -euo pipefail
bin=$(realpath "$1"); user=$2; launches=${3:-20}; files=${4:-2000}
dir=$(mktemp -d); chmod 755 "$dir"
mode=$(stat -c %a /dev/fuse)
trap 'chmod "$mode" /dev/fuse; rm -rf "$dir"' EXIT
mkdir -p "$dir/s" "$dir/d/workflows/wf1"
cat > "$dir/work.py" <<'PY'
import os, sys, time
d = os.path.join(sys.argv[1], "many"); n = int(sys.argv[2]); os.makedirs(d, exist_ok=True)
t = time.time()
for i in range(n):
    with open(os.path.join(d, "f%d" % i), "w") as f: f.write("x" * 100)
for i in range(n):
    with open(os.path.join(d, "f%d" % i)) as f: f.read()
for name in os.listdir(d): os.stat(os.path.join(d, name))
for i in range(n): os.unlink(os.path.join(d, "f%d" % i))
print("%.2f" % (time.time() - t))
PY
chown -R "$user" "$dir"
run() {
  su -s /bin/sh "$user" -c "cd $dir && HOME=$dir $bin --state-root $dir/s --workspace-docs $dir/d step --chat c1 --grant $dir/d/workflows/wf1:rw -- $*"
}
for m in 666 600 666 600; do
  chmod "$m" /dev/fuse
  start=$(date +%s%N)
  for _ in $(seq "$launches"); do run /bin/true; done
  end=$(date +%s%N)
  work=$(run /usr/bin/python3 "$dir/work.py" "$dir/d/workflows/wf1" "$files")
  echo "/dev/fuse $m ($([ "$m" = 666 ] && echo guard || echo stand-ins)): launch $(( (end - start) / launches / 1000 )) us, $files files ${work} s"
done
