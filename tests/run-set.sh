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

# TESSERA_TEST_RUN_SETS (comma-separated names), when set, runs only those
# sets: the others SKIP, by name (.ci/run's distcheck checks that the tarball
# builds and its tests find their files; one set does that).
if [ -n "${TESSERA_TEST_RUN_SETS:-}" ]; then
    case ",$TESSERA_TEST_RUN_SETS," in
    *",$name,"*) ;;
    *)
        echo "SKIP: kernel set $name: not in TESSERA_TEST_RUN_SETS ($TESSERA_TEST_RUN_SETS)"
        exit 77 ;;
    esac
fi

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
# Each line of eval-demo says exact_matches=N; keep N of the batch-16 runs.
exact_of() {
    sed -n 's/.*exact_matches=\([0-9]*\).*/\1/p'
}
f32_greedy=
f32_beam=
# TESSERA_TEST_ACCURACY=quick (for runs that repeat code make check has run,
# or run under an emulator: .ci/neon, the distcheck in .ci/run) keeps the
# batch-16 runs and, for bf16 and int8, greedy decoding only; none
# (.ci/no-avx512, whose machine code make check has just run natively)
# runs no accuracy at all; the default, full, runs them all.
accuracy=${TESSERA_TEST_ACCURACY:-full}
if [ "$accuracy" = none ]; then
    echo "== accuracy of models/numbers-en-de, kernel set $name: not run (TESSERA_TEST_ACCURACY=none)"
    exit $status
fi
f32_runs="--beam 1 --batch 1|--beam 1 --batch 16|--beam 4 --batch 1|--beam 4 --batch 16"
reduced_decodings="greedy beam"
if [ "$accuracy" = quick ]; then
    f32_runs="--beam 1 --batch 16|--beam 4 --batch 16"
    reduced_decodings=greedy
fi
old_ifs=$IFS
IFS='|'
set -f
# shellcheck disable=SC2086 # split on | only
set -- $f32_runs
set +f
IFS=$old_ifs
for options in "$@"; do
    echo "== accuracy of models/numbers-en-de, kernel set $name, $options (floor $floor)"
    # shellcheck disable=SC2086 # the runner and the options are words
    result=$(TESSERA_ISA=$name "$srcdir/tools/eval-demo" "$model" \
        --tessera "${TESSERA_TEST_RUNNER:-} $build/tests/tessera-test" --min-exact "$floor" \
        $options) || status=1
    echo "$result"
    case $options in
    "--beam 1 --batch 16") f32_greedy=$(echo "$result" | exact_of) ;;
    "--beam 4 --batch 16") f32_beam=$(echo "$result" | exact_of) ;;
    esac
done
# Reduced precision: bf16 and int8 must stay within 0.5 points (5 sentences
# in 1000) of what f32 got above with the same decoding, this set, batch 16
# (batch and thread invariance are the other programs' business).
for type in bf16 int8; do
for decoding in $reduced_decodings; do
    if [ "$decoding" = greedy ]; then f32=$f32_greedy beam=1; else f32=$f32_beam beam=4; fi
    if [ -z "$f32" ]; then
        echo "FAIL: no f32 exact-match count for $decoding to compare bf16 with"
        status=1
        continue
    fi
    sentences=$(wc -l <"$model/test.ref.txt")
    floor_type=$((f32 - sentences / 200))
    echo "== accuracy, kernel set $name, --compute-type $type --beam $beam --batch 16" \
        "(floor $floor_type: f32's $f32 less 0.5 points)"
    # shellcheck disable=SC2086 # the runner is words
    TESSERA_ISA=$name "$srcdir/tools/eval-demo" "$model" \
        --tessera "${TESSERA_TEST_RUNNER:-} $build/tests/tessera-test" \
        --min-exact "$floor_type" --compute-type $type --beam $beam --batch 16 || status=1
done
done
exit $status
