#!/bin/sh
# make check: .ci/stage, CI's clock, fails a stage that takes longer than its
# allowance with one line naming it, fails a stage that fails, and passes one
# within its allowance (.ci/README.md).
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}
stage=$srcdir/.ci/stage
if ! command -v bash >/dev/null 2>&1; then
    echo "SKIP: .ci/stage needs bash"
    exit 77
fi
# Inside .ci/run, the demonstration stages must not join CI's own table.
unset CI_STAGE_TIMES
work=$(mktemp -d "${TMPDIR:-/tmp}/ci-stage-test.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT INT TERM
status=0

bash "$stage" slow-demo 1s sleep 2 >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -ne 1 ] || [ "$(wc -l <"$work/err")" -ne 1 ] ||
    ! grep -qE '^CI: stage slow-demo took [2-9] s, over its allowance of 1 s$' "$work/err"; then
    echo "FAIL: a stage over its allowance: exit $rc, stderr:"
    cat "$work/err"
    status=1
fi

bash "$stage" failing-demo 1 false >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -ne 1 ] || ! grep -q '^CI: stage failing-demo failed (exit 1)' "$work/err"; then
    echo "FAIL: a failing stage: exit $rc, stderr:"
    cat "$work/err"
    status=1
fi

CI_STAGE_TIMES=$work/times bash "$stage" quick-demo 1 true >"$work/out" 2>"$work/err"
rc=$?
# (SECONDS counts whole seconds: `true` may be seen to take one.)
if [ "$rc" -ne 0 ] || [ -s "$work/err" ] ||
    ! awk '$1 == "quick-demo" && $2 <= 1 && $3 == 60 { ok = 1 } END { exit !ok }' "$work/times"; then
    echo "FAIL: a stage within its allowance: exit $rc, times '$(cat "$work/times")', stderr:"
    cat "$work/err"
    status=1
fi

[ "$status" -eq 0 ] && echo "PASS: .ci/stage fails a slow stage and a failing one, passes a quick one"
exit $status
