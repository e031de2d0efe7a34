#!/usr/bin/env bash
# What only a Mac can settle about Seatbelt, one line per fact: the smallest sandbox-exec
# command for each, run in a temporary folder, each verdict read from the disk (a file read,
# made or left), never from what the program says. docs/macos.md says which profile choice
# depends on which line.
#
# Run it from a plain Terminal (inside another sandbox every line says so), as the person who
# will run the CLIs: bash scripts/macos-facts.sh
# It changes nothing of the person's: the crontab it rewrites is the one it read, the launchd
# job and the preference domain it makes are removed, the disk image is detached, the keychain
# item it makes (cli-sandbox-facts-PID, in the login keychain) is deleted. Every question of
# issue 29 (18 to 24) runs its attempt unconfined first, as a control that must succeed.
set -u

SBX=/usr/bin/sandbox-exec
if [ "$(uname -s)" != Darwin ] || [ ! -x "$SBX" ]; then
  echo "macos-facts: needs a Mac with $SBX" >&2
  exit 2
fi
if ! "$SBX" -p '(version 1)(allow default)' /usr/bin/true 2>/dev/null; then
  echo "macos-facts: sandbox-exec refuses to run (already inside a sandbox?): run from a plain Terminal" >&2
  exit 2
fi

T=$(cd "$(mktemp -d)" && pwd -P) || exit 2
cleanup() { rm -rf "$T"; }
trap cleanup EXIT

fact() { printf 'FACT %s: %s\n' "$1" "$2"; }

# sb PROFILE [-DNAME=VALUE ...] -- COMMAND...: the command under PROFILE, its output dropped.
sb() {
  local profile=$1
  shift
  "$SBX" -p "$profile" "$@" >/dev/null 2>&1
}

# A regex that matches exactly the text given (dots and other specials escaped).
re_quote() { printf '%s' "$1" | sed -e 's/[][\.^$*+?(){}|]/\\&/g'; }

# The profile's folded regex of a path (crates/launch/src/seatbelt/mod.rs, folded_regex): `^`, the
# path without a trailing `/`, what regex-quote escapes escaped, each ASCII letter as [aA]. The
# profile appends `/?$` (the path) or `(/|$)` (the path and beneath) in its text.
fold() {
  /usr/bin/perl -e '$_ = shift; s/([\^.\[\$()|*+?{\\])/\\$1/g; s/([A-Za-z])/"[".lc($1).uc($1)."]"/ge; print "^$_"' "${1%/}"
}

# swap A B: renameatx_np(AT_FDCWD, A, AT_FDCWD, B, RENAME_SWAP), system call 488, through perl
# (part of macOS, unlike a compiler or python3). Exit 0 when swapped.
SWAP='exit(syscall(488, -2, $ARGV[0], -2, $ARGV[1], 2) == 0 ? 0 : 1)'

# Whether this volume ignores case: $T/Case exists also as $T/case.
mkdir -p "$T/Case"
if [ -e "$T/case" ]; then case_insensitive=yes; else case_insensitive=no; fi

mkdir -p "$T/closed" "$T/open" "$T/src" "$T/dst"
echo secret >"$T/closed/f"
echo source >"$T/src/f"
echo open >"$T/open/f"

# 1. Does a rule on file* cover file-link? (libsandbox's table says no: terminal, -> default.)
sb '(version 1)(allow default)(deny file* (subpath (param "D")))' "-DD=$T/closed" -- \
  /bin/ln "$T/closed/f" "$T/open/linked"
if [ -e "$T/open/linked" ]; then v="no (a hard link to a file under (deny file* ...) was made)"; else v="yes"; fi
fact "file* covers file-link" "$v"
rm -f "$T/open/linked"

# 2. Which path link(2) is checked on: a deny on the source's folder, then on the destination's.
sb '(version 1)(allow default)(deny file-link (subpath (param "D")))' "-DD=$T/src" -- \
  /bin/ln "$T/src/f" "$T/open/l1"
if [ -e "$T/open/l1" ]; then s=no; else s=yes; fi
sb '(version 1)(allow default)(deny file-link (subpath (param "D")))' "-DD=$T/dst" -- \
  /bin/ln "$T/open/f" "$T/dst/l2"
if [ -e "$T/dst/l2" ]; then d=no; else d=yes; fi
fact "link(2) checked on" "source: $s, destination: $d"
rm -f "$T/open/l1" "$T/dst/l2"

# 3. The same for clonefile(2) (cp -c), and whether file* covers file-clone.
sb '(version 1)(allow default)(deny file-clone (subpath (param "D")))' "-DD=$T/src" -- \
  /bin/cp -c "$T/src/f" "$T/open/c1"
if [ -e "$T/open/c1" ]; then s=no; else s=yes; fi
sb '(version 1)(allow default)(deny file-clone (subpath (param "D")))' "-DD=$T/dst" -- \
  /bin/cp -c "$T/open/f" "$T/dst/c2"
if [ -e "$T/dst/c2" ]; then d=no; else d=yes; fi
fact "clonefile(2) checked on" "source: $s, destination: $d"
sb '(version 1)(allow default)(deny file* (subpath (param "D")))' "-DD=$T/closed" -- \
  /bin/cp -c "$T/closed/f" "$T/open/c3"
if [ -e "$T/open/c3" ] && grep -q secret "$T/open/c3"; then v="no (a clone of a file under (deny file* ...) was made)"; else v="yes"; fi
fact "file* covers file-clone" "$v"
rm -f "$T/open/c1" "$T/dst/c2" "$T/open/c3"

# 4. Precedence between an operation and its parent. (a) a filtered rule on the specific
# operation, then a later filtered one on its parent; (b) nono's case, an unfiltered rule on
# the specific operation, then a later filtered one on its parent.
echo a >"$T/open/pa"
sb '(version 1)(allow default)(deny file-write-unlink (literal (param "F")))(allow file* (subpath (param "D")))' \
  "-DF=$T/open/pa" "-DD=$T" -- /bin/rm -f "$T/open/pa"
if [ -e "$T/open/pa" ]; then a="the specific operation's rule held"; else a="the later rule on file* won"; fi
echo b >"$T/open/pb"
sb '(version 1)(allow default)(deny file-write-unlink)(allow file-write* (subpath (param "D")))' \
  "-DD=$T" -- /bin/rm -f "$T/open/pb"
if [ -e "$T/open/pb" ]; then b="the unfiltered specific rule held"; else b="the later filtered rule on file-write* won"; fi
fact "precedence (filtered specific, later parent)" "$a"
fact "precedence (unfiltered specific, later filtered parent)" "$b"
rm -f "$T/open/pa" "$T/open/pb"

# 5. Do literal and subpath ignore case on this volume?
mkdir -p "$T/Case/Closed"
echo secret >"$T/Case/Secret.txt"
echo secret >"$T/Case/Closed/x"
if [ -e "$T/case/secret.txt" ]; then
  sb '(version 1)(allow default)(deny file-read* (literal (param "F")))' "-DF=$T/Case/Secret.txt" -- \
    /bin/sh -c "cat '$T/case/secret.txt' > '$T/open/case1'"
  if grep -q secret "$T/open/case1" 2>/dev/null; then l="no (read through another case)"; else l=yes; fi
  sb '(version 1)(allow default)(deny file-read* (subpath (param "D")))' "-DD=$T/Case/Closed" -- \
    /bin/sh -c "cat '$T/case/closed/x' > '$T/open/case2'"
  if grep -q secret "$T/open/case2" 2>/dev/null; then p="no (read through another case)"; else p=yes; fi
  fact "literal ignores case on a case-insensitive volume" "$l"
  fact "subpath ignores case on a case-insensitive volume" "$p"
else
  fact "literal ignores case on a case-insensitive volume" "not asked: this volume is case-sensitive"
  fact "subpath ignores case on a case-insensitive volume" "not asked: this volume is case-sensitive"
fi

# 6. A regex from a -D value, short and about 6 KB long.
mkdir -p "$T/re"
echo secret >"$T/re/x"
base=$(re_quote "$T/re/")
sb '(version 1)(allow default)(deny file-read* (regex (param "R")))' "-DR=^${base}x\$" -- \
  /bin/sh -c "cat '$T/re/x' > '$T/open/re1'"
if grep -q secret "$T/open/re1" 2>/dev/null; then v="no (read)"; else v=yes; fi
fact "a regex from a -D value applies" "$v"
alts=""
for i in $(seq 1 600); do alts="${alts}n$(printf '%04d' "$i")|"; done
long="^${base}(${alts}x)\$"
sb '(version 1)(allow default)(deny file-read* (regex (param "R")))' "-DR=$long" -- \
  /bin/sh -c "cat '$T/re/x' > '$T/open/re2'"
status=$?
if grep -q secret "$T/open/re2" 2>/dev/null; then v="no (read; sandbox-exec exit $status)"; elif [ "$status" -ne 0 ] && [ ! -e "$T/open/re2" ]; then v="refused to compile or to run (exit $status)"; else v=yes; fi
fact "a ${#long}-byte regex from a -D value applies" "$v"

# 7. A -D value holding '=': is it split at the first '=' only?
mkdir -p "$T/eq"
echo secret >"$T/eq/a=b"
sb '(version 1)(allow default)(deny file-read* (literal (param "P")))' "-DP=$T/eq/a=b" -- \
  /bin/sh -c "cat '$T/eq/a=b' > '$T/open/eq'"
if grep -q secret "$T/open/eq" 2>/dev/null; then v="no (the value was cut)"; else v=yes; fi
fact "a -D value keeps everything after the first =" "$v"

# 8. The message tag in the log line of a denial.
tag="cli-sandbox: facts-$$"
sb "(version 1)(allow default)(deny file-read* (literal (param \"F\")) (with message \"$tag\"))" \
  "-DF=$T/closed/f" -- /bin/cat "$T/closed/f"
sleep 2
line=$(log show --last 1m --style compact --predicate "eventMessage CONTAINS \"facts-$$\"" 2>/dev/null | grep -m1 "facts-$$")
fact "the message tag in the log" "${line:-not found in log show --last 1m}"

# 9. A unix datagram sent to a socket bound outside, under (deny network-outbound (remote unix-socket)).
nc -lUu "$T/dgram.sock" >"$T/dgram.out" 2>/dev/null &
receiver=$!
sleep 1
sb '(version 1)(allow default)(deny network-outbound (remote unix-socket))' -- \
  /bin/sh -c "printf hello | nc -Uu -w1 '$T/dgram.sock'"
sleep 1
kill "$receiver" 2>/dev/null
wait "$receiver" 2>/dev/null
if grep -q hello "$T/dgram.out" 2>/dev/null; then v="no (the datagram arrived)"; else v=yes; fi
fact "(remote unix-socket) refuses a datagram send" "$v"

# 10. crontab under (allow default): can a sandboxed process install a crontab? It installs
# the person's own crontab again, unchanged, and puts back what was there.
if crontab -l >"$T/cron.saved" 2>/dev/null; then had=yes; else had=no; : >"$T/cron.saved"; fi
sb '(version 1)(allow default)' -- /usr/bin/crontab "$T/cron.saved"
status=$?
if [ "$had" = yes ]; then crontab "$T/cron.saved"; else crontab -r 2>/dev/null; fi
if [ "$status" -eq 0 ]; then v="yes (a job would run outside within a minute)"; else v="no (exit $status)"; fi
fact "crontab installs under (allow default)" "$v"

# 11. Does this release know mach-task-read (the guard of base.sbpl)?
echo marker >"$T/open/m"
sb "(version 1)(allow default)(if (defined? 'mach-task-read) (deny file-read* (literal (param \"F\"))))" \
  "-DF=$T/open/m" -- /bin/sh -c "cat '$T/open/m' > '$T/open/m2'"
status=$?
if [ "$status" -ne 0 ] && [ ! -e "$T/open/m2" ]; then v="the guard does not compile (exit $status)"; elif grep -q marker "$T/open/m2"; then v=no; else v=yes; fi
fact "this release knows mach-task-read" "$v"

# 12. launchd jobs under (deny job-creation).
label="com.example.cli-sandbox-facts.$$"
sb '(version 1)(allow default)(deny job-creation)' -- \
  /bin/launchctl submit -l "$label" -- /usr/bin/touch "$T/open/job"
sleep 2
launchctl remove "$label" 2>/dev/null
if [ -e "$T/open/job" ]; then v="no (the job ran outside)"; else v=yes; fi
fact "(deny job-creation) refuses launchctl submit" "$v"

# 13. Preferences through cfprefsd under (deny user-preference-write).
domain="com.example.cli-sandbox-facts"
sb '(version 1)(allow default)(deny user-preference-write)' -- \
  /usr/bin/defaults write "$domain" probe written
if [ "$(defaults read "$domain" probe 2>/dev/null)" = written ]; then v="no (written)"; else v=yes; fi
defaults delete "$domain" 2>/dev/null
fact "(deny user-preference-write) refuses defaults write" "$v"

# 14. TIOCSTI into the controlling terminal under (allow default): one byte pushed, read back.
if [ -t 0 ] && [ -x /usr/bin/perl ]; then
  sb '(version 1)(allow default)' -- /usr/bin/perl -e 'ioctl(STDIN, 0x80017472, "Z") or exit 1' </dev/tty
  status=$?
  ch=""
  IFS= read -r -t 1 -n 1 ch </dev/tty
  if [ "$ch" = Z ]; then v="yes (a confined process can type into the person's terminal)"; else v="no (exit $status)"; fi
  fact "TIOCSTI pushes input under (allow default)" "$v"
else
  fact "TIOCSTI pushes input under (allow default)" "not asked: standard input is not a terminal"
fi

# 15. Another process's arguments (KERN_PROCARGS2, the MIB route ps takes) under a deny of the
# named sysctl.
sb '(version 1)(allow default)(deny sysctl-read (sysctl-name-prefix "kern.procargs"))' -- \
  /bin/sh -c "ps -o command= -p $$ > '$T/open/ps'"
if grep -q facts "$T/open/ps" 2>/dev/null; then v="no (ps shows this script's arguments)"; else v=yes; fi
fact "(deny sysctl-read (sysctl-name-prefix \"kern.procargs\")) hides other processes' arguments" "$v"

# 16. A disk image mounted through DiskArbitration, with its Mach service refused.
mkdir -p "$T/mnt"
if hdiutil create -quiet -megabytes 2 -fs HFS+ -volname clisbxfacts "$T/img.dmg" 2>/dev/null; then
  sb '(version 1)(allow default)(deny mach-lookup (global-name "com.apple.DiskArbitration.diskarbitrationd"))' -- \
    /usr/bin/hdiutil attach -quiet -mountpoint "$T/mnt" "$T/img.dmg"
  if mount | grep -q " on $T/mnt "; then
    v="no (mounted)"
    hdiutil detach -quiet "$T/mnt" 2>/dev/null
  else
    v=yes
  fi
  # Detach a device left attached without a mount.
  dev=$(hdiutil info | awk -v img="$T/img.dmg" '$0 ~ "image-path" && index($0, img) {f=1} f && /^\/dev\/disk/ {print $1; exit}')
  [ -n "$dev" ] && hdiutil detach -quiet "$dev" 2>/dev/null
  fact "refusing DiskArbitration stops hdiutil attach from mounting" "$v"
else
  fact "refusing DiskArbitration stops hdiutil attach from mounting" "not asked: hdiutil create failed"
fi

# 17. The regex that refuses other vendors' Mach services compiles, and Apple's still answer.
sb '(version 1)(allow default)(deny mach-lookup (global-name-regex #"^([^c]|c[^o]|co[^m]|com[^.]|com\.[^a]|com\.a[^p]|com\.ap[^p]|com\.app[^l]|com\.appl[^e]|com\.apple[^.]|c$|co$|com$|com\.$|com\.a$|com\.ap$|com\.app$|com\.appl$|com\.apple$)"))' -- \
  /usr/bin/security list-keychains
status=$?
if [ "$status" -eq 0 ]; then v=yes; else v="no (exit $status)"; fi
fact "the non-Apple Mach-service regex compiles and security(1) still runs" "$v"

# --- The questions of issue 29. Each starts with an unconfined control that must succeed.

# 18. A swap (renamex_np RENAME_SWAP) of a pinned folder with a decoy: under the pin of before
# (unlink denied only), under a create denied only, and under today's (unlink, create and link
# denied, folded).
swap_fact() { # NAME PROFILE-RULE
  rm -rf "$T/sw" && mkdir -p "$T/sw/pinned" "$T/sw/decoy" && echo real >"$T/sw/pinned/real" && echo fake >"$T/sw/decoy/fake"
  sb "(version 1)(allow default)$2" "-DP=$(fold "$T/sw/pinned")" -- \
    /usr/bin/perl -e "$SWAP" "$T/sw/decoy" "$T/sw/pinned"
  if [ -e "$T/sw/pinned/fake" ]; then v="no (swapped: the decoy took the pinned name)"; else v=yes; fi
  fact "$1" "$v"
}
rm -rf "$T/sw" && mkdir -p "$T/sw/pinned" "$T/sw/decoy" && echo fake >"$T/sw/decoy/fake"
if /usr/bin/perl -e "$SWAP" "$T/sw/decoy" "$T/sw/pinned" && [ -e "$T/sw/pinned/fake" ]; then
  swap_fact "a swap is refused by a deny of file-write-unlink on the pinned end" \
    '(deny file-write-unlink (regex (string-append (param "P") "/?$")))'
  swap_fact "a swap is refused by a deny of file-write-create on the pinned end" \
    '(deny file-write-create (regex (string-append (param "P") "/?$")))'
  swap_fact "a swap is refused by the profile's pin (unlink, create, link; folded)" \
    '(deny file-write-unlink file-write-create file-link (regex (string-append (param "P") "/?$")))'
else
  fact "a swap is refused by the profile's pin (unlink, create, link; folded)" "not asked: the unconfined swap failed"
fi

# 19. A missing hardened file created in another case: under an exact subpath (the rule of
# before) and under the folded regex (today's).
if [ "$case_insensitive" = yes ]; then
  mkdir -p "$T/hh"
  : >"$T/hh/.ZLOGIN" && ls -a "$T/hh" | grep -qx '.ZLOGIN'
  control=$?
  rm -f "$T/hh/.zlogin"
  if [ "$control" -eq 0 ]; then
    sb '(version 1)(allow default)(deny file-write* (subpath (param "H")))' "-DH=$T/hh/.zlogin" -- \
      /bin/sh -c ": > '$T/hh/.ZLOGIN'"
    if [ -e "$T/hh/.zlogin" ]; then v="no (created as .ZLOGIN)"; else v=yes; fi
    rm -f "$T/hh/.zlogin"
    fact "an exact subpath refuses a missing file created in another case" "$v"
    sb '(version 1)(allow default)(deny file-write* (regex (string-append (param "H") "(/|$)")))' \
      "-DH=$(fold "$T/hh/.zlogin")" -- /bin/sh -c ": > '$T/hh/.ZLOGIN'"
    if [ -e "$T/hh/.zlogin" ]; then v="no (created as .ZLOGIN)"; else v=yes; fi
    rm -f "$T/hh/.zlogin"
    fact "the folded regex refuses a missing file created in another case" "$v"
  else
    fact "the folded regex refuses a missing file created in another case" "not asked: the unconfined create failed"
  fi
else
  fact "the folded regex refuses a missing file created in another case" "not asked: this volume is case-sensitive"
fi

# 20. A blocked program run by another case (/BIN/CAT for /bin/cat, as /usr/bin/CRONTAB for
# crontab): exact literal (before) and folded (today).
echo catted >"$T/open/cat-src"
if /BIN/CAT "$T/open/cat-src" >"$T/open/cat0" 2>/dev/null && grep -q catted "$T/open/cat0"; then
  sb '(version 1)(allow default)(deny process-exec* (literal "/bin/cat"))' -- \
    /bin/sh -c "/BIN/CAT '$T/open/cat-src' > '$T/open/cat1'"
  if grep -q catted "$T/open/cat1" 2>/dev/null; then v="no (ran as /BIN/CAT)"; else v=yes; fi
  fact "an exact literal refuses exec of a program by another case" "$v"
  sb '(version 1)(allow default)(deny process-exec* (regex (string-append (param "B") "/?$")))' \
    "-DB=$(fold /bin/cat)" -- /bin/sh -c "/BIN/CAT '$T/open/cat-src' > '$T/open/cat2'"
  if grep -q catted "$T/open/cat2" 2>/dev/null; then v="no (ran as /BIN/CAT)"; else v=yes; fi
  fact "the folded regex refuses exec of a program by another case" "$v"
else
  fact "the folded regex refuses exec of a program by another case" "not asked: /BIN/CAT does not run unconfined (case-sensitive system volume?)"
fi

# 21. Other names of a closed file: /.vol/<device>/<inode> and the data volume's
# /System/Volumes/Data<path>.
dev=$(stat -f %d "$T/closed/f"); ino=$(stat -f %i "$T/closed/f")
closed_rule='(deny file-read* (regex (string-append (param "C") "(/|$)")))'
for name in "/.vol/$dev/$ino" "/System/Volumes/Data$T/closed/f"; do
  if cat "$name" 2>/dev/null | grep -q secret; then
    rm -f "$T/open/alias"
    sb "(version 1)(allow default)$closed_rule" "-DC=$(fold "$T/closed")" -- \
      /bin/sh -c "cat '$name' > '$T/open/alias'"
    if grep -q secret "$T/open/alias" 2>/dev/null; then v="no (read through $name)"; else v=yes; fi
  else
    v="not asked: $name does not read unconfined"
  fi
  case "$name" in /.vol/*) what="/.vol/<dev>/<inode>" ;; *) what="/System/Volumes/Data<path>" ;; esac
  fact "a closed folder's file is refused through $what" "$v"
done

# 22. Precedence of require-all: an allow through (require-all ...) against a later plain
# deny, and a deny through (require-all ...) against a later plain allow.
mkdir -p "$T/ra" && echo secret >"$T/ra/x.txt"
if cat "$T/ra/x.txt" | grep -q secret; then
  sb '(version 1)(allow default)(allow file-read* (require-all (subpath (param "D")) (regex #"\.txt$")))(deny file-read* (literal (param "F")))' \
    "-DD=$T/ra" "-DF=$T/ra/x.txt" -- /bin/sh -c "cat '$T/ra/x.txt' > '$T/open/ra1'"
  if grep -q secret "$T/open/ra1" 2>/dev/null; then v="the require-all allow won"; else v="the later deny won"; fi
  fact "precedence (require-all allow, later plain deny)" "$v"
  sb '(version 1)(allow default)(deny file-read* (require-all (subpath (param "D")) (regex #"\.txt$")))(allow file-read* (literal (param "F")))' \
    "-DD=$T/ra" "-DF=$T/ra/x.txt" -- /bin/sh -c "cat '$T/ra/x.txt' > '$T/open/ra2'"
  if grep -q secret "$T/open/ra2" 2>/dev/null; then v="the later allow won"; else v="the require-all deny won"; fi
  fact "precedence (require-all deny, later plain allow)" "$v"
fi

# 23. file-lock (new on 14.x): does a read-only grant (file* denied, then reading allowed) let a
# process flock a file? Says whether file-lock falls under file* or elsewhere.
mkdir -p "$T/lk" && echo x >"$T/lk/f"
LOCK='open(my $f, "<", $ARGV[0]) or exit 2; use Fcntl qw(:flock); exit(flock($f, LOCK_EX | LOCK_NB) ? 0 : 1)'
if /usr/bin/perl -e "$LOCK" "$T/lk/f"; then
  sb '(version 1)(allow default)(deny file* (subpath (param "D")))(allow file-read* file-test-existence file-map-executable (subpath (param "D")))' \
    "-DD=$T/lk" -- /usr/bin/perl -e "$LOCK" "$T/lk/f"
  status=$?
  case $status in 0) v="yes (locked)" ;; 1) v="no (flock refused)" ;; *) v="the open failed (exit $status)" ;; esac
  fact "a read-only grant lets a process flock its file" "$v"
  sb "(version 1)(allow default)(if (defined? 'file-lock) (deny file-lock (subpath (param \"D\"))))" \
    "-DD=$T/lk" -- /usr/bin/perl -e "$LOCK" "$T/lk/f"
  status=$?
  case $status in 0) v="no (locked, or the release lacks file-lock)" ;; 1) v="yes" ;; *) v="the profile or the open failed (exit $status)" ;; esac
  fact "(deny file-lock ...) refuses flock" "$v"
fi

# 24. A keychain item read through /usr/bin/security, under (allow default) with the Mach
# services the profile refuses. The item is made here in the login keychain and deleted after.
svc="cli-sandbox-facts-$$"
if security add-generic-password -a cli-sandbox-facts -s "$svc" -w "secret-$$" 2>/dev/null; then
  if [ "$(security find-generic-password -s "$svc" -w 2>/dev/null)" = "secret-$$" ]; then
    sb '(version 1)(allow default)(deny mach-lookup (global-name "com.apple.windowserver.active") (global-name "com.apple.windowserver") (global-name "com.apple.UNCUserNotification") (global-name-regex #"^com\.apple\.coreservices\.sharedfilelistd") (global-name-regex #"^com\.apple\.backgroundtaskmanagement") (global-name "com.apple.xpc.smd"))' -- \
      /bin/sh -c "security find-generic-password -s '$svc' -w > '$T/open/kc'"
    if [ "$(cat "$T/open/kc" 2>/dev/null)" = "secret-$$" ]; then v="yes (read inside)"; else v="no"; fi
  else
    v="not asked: the unconfined read failed"
  fi
  security delete-generic-password -s "$svc" >/dev/null 2>&1
  fact "a keychain item made with security(1) is read through it inside" "$v"
else
  fact "a keychain item made with security(1) is read through it inside" "not asked: security add-generic-password failed"
fi

# 25. A missing settings place (issue 24): the profile creates nothing and relies on a folded
# deny of file-write*, file-link and file-clone on the name (and beneath it) refusing every way a
# chat could make it: a file, a symlink (symlink(2) asked as file-write-create on the link's
# name), a hard link (file-link at the destination), a rename onto it (file-write-create at the
# destination), a folder, and the same in another case. Each is first made unconfined, the control.
settings_fact() { # NAME COMMAND-MAKING-$T/st/cfg/settings.json
  rm -rf "$T/st" && mkdir -p "$T/st/cfg" && echo planted >"$T/st/planted"
  /bin/sh -c "$2" >/dev/null 2>&1
  if [ ! -e "$T/st/cfg/settings.json" ] && [ ! -L "$T/st/cfg/settings.json" ]; then
    fact "a missing settings file is not made by $1" "not asked: the unconfined attempt failed"
    return
  fi
  rm -rf "$T/st" && mkdir -p "$T/st/cfg" && echo planted >"$T/st/planted"
  sb '(version 1)(allow default)(deny file-write* file-link file-clone file-write-setugid (regex (string-append (param "S") "(/|$)")))' \
    "-DS=$(fold "$T/st/cfg/settings.json")" -- /bin/sh -c "$2"
  if [ -e "$T/st/cfg/settings.json" ] || [ -L "$T/st/cfg/settings.json" ]; then v="no (made)"; else v=yes; fi
  fact "a missing settings file is not made by $1" "$v"
}
settings_fact "a write" "printf x > '$T/st/cfg/settings.json'"
settings_fact "a symlink" "ln -s '$T/st/planted' '$T/st/cfg/settings.json'"
settings_fact "a hard link" "ln '$T/st/planted' '$T/st/cfg/settings.json'"
settings_fact "a rename onto it" "mv '$T/st/planted' '$T/st/cfg/settings.json'"
settings_fact "a folder" "mkdir '$T/st/cfg/settings.json'"
settings_fact "a clone (cp -c)" "cp -c '$T/st/planted' '$T/st/cfg/settings.json'"
if [ "$case_insensitive" = yes ]; then
  settings_fact "a write in another case" "printf x > '$T/st/cfg/SETTINGS.JSON'"
fi
# The folder above, missing: a prepared folder renamed into its place under the ancestors' rule
# (file-write-unlink, -create and file-link on the name, folded).
rm -rf "$T/sa" && mkdir -p "$T/sa/prepared" && echo planted >"$T/sa/prepared/settings.json"
sb '(version 1)(allow default)(deny file-write-unlink file-write-create file-link (regex (string-append (param "A") "/?$")))' \
  "-DA=$(fold "$T/sa/.cli")" -- /usr/bin/perl -e 'rename($ARGV[0], $ARGV[1]) or exit 1' "$T/sa/prepared" "$T/sa/.cli"
if [ -e "$T/sa/.cli/settings.json" ]; then v="no (renamed in)"; else v=yes; fi
fact "a prepared folder is not renamed into a missing settings folder's parent" "$v"
