#!/bin/bash
# 'perf test list' of a perf copied beside a tests/shell/ directory, under
# valgrind: the errors whose stack is in shell_tests__dir_fd() and that
# are about a system call's argument (the path readlink() left
# unterminated, passed to lstat()/open()), and whether the probe test is listed.
perf=$1
d=$(mktemp -d /tmp/h30sd.XXXX)
mkdir -p "$d/tests/shell"
cp "$perf" "$d/perf"
printf '#!/bin/sh\n# h30 probe test\nexit 0\n' >"$d/tests/shell/h30_probe.sh"
chmod +x "$d/tests/shell/h30_probe.sh"
cd / || exit 1
valgrind --num-callers=4 "$d/perf" test list >"$d/out" 2>"$d/vg"
sys=$(awk '/^==[0-9]+== Syscall param/{s=1; next} s && /shell_tests__dir_fd/{n++; s=0} /^==[0-9]+== $/{s=0} END{print n+0}' "$d/vg")
all=$(grep -c ": shell_tests__dir_fd" "$d/vg")
listed=$(grep -c "h30 probe test" "$d/out" "$d/vg" | awk -F: '{s+=$2} END{print s}')
echo "$perf: $sys syscall(s) given uninitialised bytes from shell_tests__dir_fd, $all valgrind frames there in all; probe test listed: $listed"
grep -A3 "Syscall param" "$d/vg" | grep -B1 -A2 "shell_tests" | head -8
rm -rf "$d"
