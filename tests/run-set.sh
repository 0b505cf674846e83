#!/bin/sh
# make check's driver for one kernel set: `run-set.sh tests/sets/NAME.set`
# runs the per-set test programs (kernels against double-precision loops,
# golden end-to-end runs against PyTorch, thread and batch invariance, and the
# held-out accuracy of the shipped trained model) under
# the set NAME only, and exits 77 (automake's SKIP) with the reason when this
# build or CPU cannot run it, so `make check` names every set that ran and
# every set that did not.
#
# TESSERA_TEST_RUNNER (words put before a binary of the build, e.g. qemu for a
# cross build) runs `tests/tessera-test info`; TESSERA_TEST_PROGRAM_RUNNER, when
# set, runs the Criterion programs instead (.ci/neon's qemu wrapper).
set -u
name=$(basename "$1" .set)
build=${TESSERA_TEST_BUILDDIR:-.}
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}

line=$(${TESSERA_TEST_RUNNER:-} "$build/tests/tessera-test" info | grep "^kernel set $name ")
case $line in
*" usable")
    echo "kernel set $name: usable here; running its tests" ;;
"")
    # Only the emulated sets can be missing from the list: configure builds
    # them when it finds SIMDe (libsimde-dev) and an avx2-capable compiler.
    echo "SKIP: kernel set $name: not built into this build's test library (no SIMDe, or not x86-64)"
    exit 77 ;;
*)
    echo "SKIP: kernel set $name: ${line#*unusable: }"
    exit 77 ;;
esac

status=0
for program in test_kernels test_golden test_threads; do
    echo "== tests/$program, kernel set $name"
    TESSERA_TEST_SETS=$name ${TESSERA_TEST_PROGRAM_RUNNER:-} "$build/tests/$program" || status=1
done

# Accuracy: the shipped trained model translates its whole held-out set under
# this set, greedy and beam 4, batch 1 and 16, and must get at least as many
# sentences exactly right as the floor tools/train-demo recorded from PyTorch.
model=$srcdir/models/numbers-en-de
floor=$(sed -n 's/^min_exact_matches //p' "$model/accuracy.txt")
if [ -z "$floor" ]; then
    echo "FAIL: $model/accuracy.txt has no min_exact_matches line"
    exit 1
fi
for options in "--beam 1 --batch 1" "--beam 1 --batch 16" "--beam 4 --batch 1" "--beam 4 --batch 16"; do
    echo "== accuracy of models/numbers-en-de, kernel set $name, $options (floor $floor)"
    # shellcheck disable=SC2086 # the runner and the options are words
    TESSERA_ISA=$name "$srcdir/tools/eval-demo" "$model" \
        --tessera "${TESSERA_TEST_RUNNER:-} $build/tests/tessera-test" --min-exact "$floor" \
        $options || status=1
done
exit $status
