#!/bin/sh
# make check: tools/eval-demo, the accuracy check of tests/run-set.sh, can
# fail. A copy of the shipped model whose references have two sentences
# changed must score two exact matches fewer, and fall below a floor of all
# sentences with exit status 1; a missing test set is exit status 2. The
# runs take every 50th sentence (--every 50: 20 of the 1000, the changed
# ones among them): what is tested is the tool's counting and its exit
# status, not the model (run-set.sh's accuracy runs are that). With every
# 4th, the two runs took 105 s of .ci/neon under qemu-aarch64.
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}
build=${TESSERA_TEST_BUILDDIR:-.}
model=$srcdir/models/numbers-en-de
tessera="${TESSERA_TEST_RUNNER:-} $build/tests/tessera-test"

work=$(mktemp -d "${TMPDIR:-/tmp}/eval-demo-test.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT INT TERM
for f in config.json model.safetensors vocab.src.txt vocab.tgt.txt source.spm target.spm test.src.txt; do
    ln -s "$(cd "$model" && pwd)/$f" "$work/$f" || exit 99
done
# Lines 1 and 51 of the references get a wrong last word.
awk 'NR == 1 || NR == 51 { $NF = "null" } { print }' "$model/test.ref.txt" >"$work/test.ref.txt"

# eval-demo MODEL_DIR [OPTIONS...] on the slice, one thread.
eval_demo() {
    dir=$1
    shift
    "$srcdir/tools/eval-demo" "$dir" --tessera "$tessera" --every 50 "$@" --threads 1
}
right=$(eval_demo "$model") || { echo "FAIL: eval-demo on the shipped model: $right"; exit 1; }
sentences=$(echo "$right" | sed -n 's/.*sentences=\([0-9]*\).*/\1/p')
[ "$sentences" -eq 20 ] || { echo "FAIL: --every 50 of 1000 sentences took $sentences"; exit 1; }
wrong=$(eval_demo "$work" --min-exact "$sentences")
status=$?
echo "shipped references: $right"
echo "two changed:        $wrong (exit $status)"
matches() { echo "$1" | sed -n 's/.*exact_matches=\([0-9]*\).*/\1/p'; }
if [ "$(matches "$wrong")" -ne $(($(matches "$right") - 2)) ]; then
    echo "FAIL: two changed references did not cost two exact matches"
    exit 1
fi
if [ "$status" -ne 1 ]; then
    echo "FAIL: eval-demo below its --min-exact floor exited $status, not 1"
    exit 1
fi
rm "$work/test.src.txt"
eval_demo "$work" >/dev/null 2>&1
status=$?
if [ "$status" -ne 2 ]; then
    echo "FAIL: eval-demo without a test set exited $status, not 2"
    exit 1
fi
echo "PASS"
