#!/bin/sh
# make check: a failed read of standard input is an error, never the end of
# the input (issue 34). For translate, score and encode: a line longer than
# the address space allows (ulimit -v; getline fails with ENOMEM and leaves
# the stream's error flag clear) must print the output of the lines before
# it, then one line naming line 2, and exit 1, not 0 with every later line
# dropped. (test_cli's a_read_error_on_standard_input_is_one_line checks a
# read that sets the error flag: a directory as standard input.)
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}
build=${TESSERA_TEST_BUILDDIR:-.}
model=$srcdir/models/numbers-en-de
tessera=$build/tests/tessera-test
if [ -n "${TESSERA_TEST_RUNNER:-}" ]; then
    echo "SKIP: tessera runs under an emulator ($TESSERA_TEST_RUNNER), whose own address space the limit would bound"
    exit 77
fi
# 150 MB of address space: tessera with this model, as run here, holds
# 33 MB; the line below needs 256 MB of buffer.
limit_kib=150000
line_bytes=200000000
# Every thread the run will have is started before it reads its input:
# one compute thread (--threads 1; OMP_NUM_THREADS=1 for libgomp itself),
# so that no OpenMP team starts while the reader's buffer is growing to the
# limit (two threads, the default here, started one then, and libgomp
# exited with "Thread creation failed" and no output in 1 run of 6 on an
# AMD Zen 5); one malloc arena (MALLOC_ARENA_MAX=1), where each thread's
# first allocation would otherwise reserve 64 MB of address space, or not,
# depending on what the reader had taken by then.
OMP_NUM_THREADS=1 MALLOC_ARENA_MAX=1
export OMP_NUM_THREADS MALLOC_ARENA_MAX
if ! (ulimit -v $limit_kib && echo "one" | "$tessera" translate -m "$model" --tokens --threads 1 >/dev/null 2>&1); then
    echo "SKIP: tessera cannot run under ulimit -v $limit_kib (a sanitizer build reserves more address space)"
    exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/stdin-read-error.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT INT TERM
status=0 fails=0
fail() {
    echo "FAIL: $*"
    status=1 fails=$((fails + 1))
}

# check NAME FIRST_LINE LAST_LINE ARGS...: FIRST_LINE, a line of 200 MB,
# LAST_LINE on standard input.
check() {
    name=$1 first=$2 last=$3 fails=0
    shift 3
    printf '%s\n' "$first" | "$tessera" "$@" >"$work/want" 2>&1 ||
        { fail "$name: its first line alone failed: $(cat "$work/want")"; return; }
    (ulimit -v $limit_kib
     { printf '%s\n' "$first"; head -c $line_bytes /dev/zero | tr '\0' 5; printf '\n%s\n' "$last"; } |
         "$tessera" "$@" >"$work/out" 2>"$work/err")
    rc=$?
    [ "$rc" -eq 1 ] || fail "$name: exit status $rc after a line past memory, expected 1"
    cmp -s "$work/want" "$work/out" || fail "$name: the output before the line past memory is not line 1's: $(head -c 300 "$work/out")"
    [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q '^tessera: line 2: cannot read standard input: ' "$work/err" ||
        fail "$name: expected one line naming line 2 on stderr, got: $(head -c 300 "$work/err")"
    [ "$fails" -ne 0 ] || echo "$name: line 1's output, then '$(cat "$work/err")', exit 1"
}

check translate "one hundred five" "two" translate -m "$model" --tokens --threads 1
check score "one hundred five	ein hundert fünf" "two	zwei" score -m "$model" --tokens --threads 1
check encode "one hundred five" "two" encode -m "$model" --tokens --pool mean --threads 1
[ "$status" -ne 0 ] || echo "PASS: translate, score and encode: a failed read is an error naming its line"
exit "$status"
