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
    # Every row of simd/sets.c is listed, built or not (the emulated ones in
    # the tests' build): a set file without its row is a mistake
    # (tests/test_sets checks the two agree).
    echo "FAIL: kernel set $name: tests/tessera-test info does not list it (no row in simd/sets.c?)"
    exit 1 ;;
*)
    echo "SKIP: kernel set $name: ${line#*unusable: }"
    exit 77 ;;
esac

# TESSERA_TEST_SET_PROGRAMS, when set, names the programs to run (a part of
# test_kernels test_golden test_threads: .ci/no-avx512 on its emulated CPU
# runs the machine code make check ran natively, and leaves thread
# invariance to it). TESSERA_TEST_SET_PROGRAMS_<set> (the set's name with _
# for -) and TESSERA_TEST_ACCURACY_<set> do the same for one set: .ci/neon
# runs scalar's kernel and golden tests only.
set_var=$(echo "$name" | tr -c 'a-z0-9\n' _)
eval "set_programs=\${TESSERA_TEST_SET_PROGRAMS_$set_var:-}"
eval "set_accuracy=\${TESSERA_TEST_ACCURACY_$set_var:-}"
programs=${set_programs:-${TESSERA_TEST_SET_PROGRAMS:-test_kernels test_golden test_threads}}
status=0
for program in $programs; do
    case $program in
    test_kernels | test_golden | test_threads) ;;
    *) echo "FAIL: TESSERA_TEST_SET_PROGRAMS: $program is not a per-set test program"; exit 1 ;;
    esac
    echo "== tests/$program, kernel set $name"
    TESSERA_TEST_SETS=$name ${TESSERA_TEST_PROGRAM_RUNNER:-} "$build/tests/$program" || status=1
done

# Accuracy: the shipped trained model translates its held-out set under this
# set, and must get at least as many sentences exactly right as the floor
# tools/train-demo recorded from PyTorch. TESSERA_TEST_ACCURACY says how much:
#   quick (the default: make check): batch 16, f32 greedy and beam 4, bf16 and
#         int8 greedy, on an even slice of the set (every 4th sentence, or
#         every TESSERA_TEST_ACCURACY_EVERY-th): each decoding path of the
#         model, at a quarter of the cost;
#   full (make check-full): the whole set, greedy and beam 4, batch 1 and 16
#         in f32, greedy and beam in bf16 and int8;
#   none (.ci/no-avx512, whose machine code make check has just run natively
#         with the same bits): no accuracy run.
# Every run is on one thread: the thread count changes no bit (test_threads
# checks that), and make -j2 runs two tests at once on 2 cores.
model=$srcdir/models/numbers-en-de
accuracy=${set_accuracy:-${TESSERA_TEST_ACCURACY:-quick}}
case $accuracy in
none)
    echo "== accuracy of models/numbers-en-de, kernel set $name: not run (TESSERA_TEST_ACCURACY${set_accuracy:+_$set_var}=none)"
    exit $status ;;
quick)
    every=${TESSERA_TEST_ACCURACY_EVERY:-4}
    case $every in
    '' | *[!0-9]* | 0*) echo "FAIL: TESSERA_TEST_ACCURACY_EVERY=$every: expected a whole number from 1"; exit 1 ;;
    esac
    f32_runs="--beam 1 --batch 16|--beam 4 --batch 16"
    reduced_decodings=greedy ;;
full)
    every=1
    f32_runs="--beam 1 --batch 1|--beam 1 --batch 16|--beam 4 --batch 1|--beam 4 --batch 16"
    reduced_decodings="greedy beam" ;;
*)
    echo "FAIL: TESSERA_TEST_ACCURACY=$accuracy: expected quick, full or none"
    exit 1 ;;
esac
total=$(wc -l <"$model/test.ref.txt")
floor=$(sed -n 's/^min_exact_matches //p' "$model/accuracy.txt")
if [ -z "$floor" ]; then
    echo "FAIL: $model/accuracy.txt has no min_exact_matches line"
    exit 1
fi
# The slice: sentences 1, 1+every, ...; the misses the floor allows on the
# whole set, in proportion, rounded up.
sentences=$(((total + every - 1) / every))
floor=$((sentences - ((total - floor) * sentences + total - 1) / total))
# Each line of eval-demo says exact_matches=N; keep N of the batch-16 runs.
exact_of() {
    sed -n 's/.*exact_matches=\([0-9]*\).*/\1/p'
}
eval_demo() {
    # shellcheck disable=SC2086 # the runner and the options are words
    TESSERA_ISA=$name "$srcdir/tools/eval-demo" "$model" \
        --tessera "${TESSERA_TEST_RUNNER:-} $build/tests/tessera-test" --every "$every" "$@" \
        --threads 1
}
f32_greedy=
f32_beam=
old_ifs=$IFS
IFS='|'
set -f
# shellcheck disable=SC2086 # split on | only
set -- $f32_runs
set +f
IFS=$old_ifs
for options in "$@"; do
    echo "== accuracy of models/numbers-en-de, kernel set $name, $options," \
        "$sentences of $total sentences (floor $floor)"
    # shellcheck disable=SC2086 # the options are words
    result=$(eval_demo --min-exact "$floor" $options) || status=1
    echo "$result"
    case $options in
    "--beam 1 --batch 16") f32_greedy=$(echo "$result" | exact_of) ;;
    "--beam 4 --batch 16") f32_beam=$(echo "$result" | exact_of) ;;
    esac
done
# Reduced precision: bf16 and int8 must stay within 0.5 points (1 sentence in
# 200; on a slice of fewer than 400, one sentence) of what f32 got above with
# the same decoding, this set, batch 16 (batch and thread invariance are the
# other programs' business).
slack=$((sentences / 200))
[ "$slack" -ge 1 ] || slack=1
for type in bf16 int8; do
for decoding in $reduced_decodings; do
    if [ "$decoding" = greedy ]; then f32=$f32_greedy beam=1; else f32=$f32_beam beam=4; fi
    if [ -z "$f32" ]; then
        echo "FAIL: no f32 exact-match count for $decoding to compare $type with"
        status=1
        continue
    fi
    floor_type=$((f32 - slack))
    echo "== accuracy, kernel set $name, --compute-type $type --beam $beam --batch 16," \
        "$sentences sentences (floor $floor_type: f32's $f32 less 0.5 points)"
    eval_demo --min-exact "$floor_type" --compute-type $type --beam $beam --batch 16 || status=1
done
done
exit $status
