#!/bin/sh
# make check: small synthetic CTranslate2 model directories
# (tests/ctranslate2/synthetic.py, written with tools/ctranslate2_files.py
# from CTranslate2's documented layout) cover what CTranslate2's own test
# model does not (binary versions 3, 5, 6; float16, bfloat16, int8
# embeddings; aliases for shared and tied tables, in int8 held once as the
# output layer's rows, or with a -128 quantized again; JSON vocabularies;
# post-norm; GELU, GELU tanh, GELU sigmoid, SiLU; learned positions;
# embedding norms; a zero start; root and string attributes; missing biases;
# an encoder alone):
#   - tessera score's log-probs are tools/ctranslate2_reference.py's float64
#     ones (|diff| <= 1e-4 + 1e-5 |ref|, the golden tests' bound; at compute
#     type int8 within 0.1 + 2 %, what quantization moves them), and greedy
#     ids its greedy ones where every decision is clear; an encoder alone's
#     vectors the reference's;
#   - every feature tessera does not run, and every broken file, is refused
#     in one line that names it, exit status 1, nothing on stdout.
# Needs /usr/bin/python3 with numpy and yaml (else SKIP).
. "$(dirname "$0")/convert-lib.sh"
tessera="${TESSERA_TEST_RUNNER:-} $build/tests/tessera-test"

"$python" "$srcdir/tests/ctranslate2/synthetic.py" "$work" ||
    { echo "FAIL: tests/ctranslate2/synthetic.py could not write the cases"; exit 1; }

# close GOT WANT [ATOL RTOL]: every value within the bound (default the
# golden tests'), as many values on each line.
close() {
    awk -v atol="${3:-1e-4}" -v rtol="${4:-1e-5}" 'NR == FNR { want[FNR] = $0; next }
         { n = split($0, g, " "); m = split(want[FNR], w, " ")
           if (n != m) { printf "line %d: %d values, expected %d\n", FNR, n, m; bad = 1; next }
           for (i = 1; i <= n; i++) {
               d = g[i] - w[i]; if (d < 0) d = -d; a = w[i] < 0 ? -w[i] : w[i]
               if (d > atol + rtol * a) {
                   printf "line %d value %d: %s, reference %s\n", FNR, i, g[i], w[i]; bad = 1 } } }
         END { if (FNR != length(want)) { print "line count differs"; bad = 1 }; exit bad }' \
        "$2" "$1"
}

accepted=0 refused=0
for dir in "$work"/*/; do
    dir=${dir%/}
    name=$(basename "$dir")
    if [ -f "$dir/refusal.expected" ]; then
        refused=$((refused + 1))
        words=$(cat "$dir/refusal.expected")
        # shellcheck disable=SC2086 # the runner is words
        $tessera info -m "$dir" >"$work/$name.out" 2>"$work/$name.err"
        code=$?
        lines=$(wc -l <"$work/$name.err")
        if [ "$code" -ne 1 ] || [ "$lines" -ne 1 ] || [ -s "$work/$name.out" ] ||
            ! grep -qF -- "$words" "$work/$name.err"; then
            fail "$name: expected one line naming '$words' and exit 1, got exit $code: $(cat "$work/$name.err")"
        else
            echo "PASS: $name refused: $(cat "$work/$name.err")"
        fi
        continue
    fi
    accepted=$((accepted + 1))
    if [ -f "$dir/encode.in" ]; then
        # shellcheck disable=SC2086
        $tessera encode -m "$dir" --pieces --threads 1 <"$dir/encode.in" >"$work/$name.encode" 2>&1 ||
            { fail "$name: encode: $(tail -n 1 "$work/$name.encode")"; continue; }
        why=$(close "$work/$name.encode" "$dir/encode.expected") &&
            echo "PASS: $name: encode agrees with the reference" || fail "$name: encode: $why"
        continue
    fi
    # shellcheck disable=SC2086
    $tessera score -m "$dir" --pieces --threads 1 --compute-type f32 <"$dir/score.in" \
        >"$work/$name.score" 2>&1 || { fail "$name: score: $(tail -n 1 "$work/$name.score")"; continue; }
    why=$(close "$work/$name.score" "$dir/score.expected") &&
        echo "PASS: $name: score agrees with the reference" || fail "$name: score: $why"
    # int8: the weights as tessera (or the file) quantizes them, activations
    # per row: within a few hundredths on these models; a wrong table or
    # scale is off by units.
    # shellcheck disable=SC2086
    $tessera score -m "$dir" --pieces --threads 1 --compute-type int8 <"$dir/score.in" \
        >"$work/$name.int8" 2>&1 || { fail "$name: score int8: $(tail -n 1 "$work/$name.int8")"; continue; }
    why=$(close "$work/$name.int8" "$dir/score.expected" 0.1 0.02) &&
        echo "PASS: $name: int8 score within 0.1 + 2 % of the reference" || fail "$name: int8 score: $why"
    # shellcheck disable=SC2086
    $tessera translate -m "$dir" --pieces --threads 1 --compute-type f32 --max-len 12 \
        <"$dir/translate.in" >"$work/$name.greedy" 2>&1 || fail "$name: translate: $(tail -n 1 "$work/$name.greedy")"
    if cmp -s "$work/$name.greedy" "$dir/translate.expected"; then
        echo "PASS: $name: greedy, $(wc -l <"$dir/translate.in") clear sentences, as the reference"
    else
        fail "$name: greedy differs from the reference: $(diff "$work/$name.greedy" "$dir/translate.expected" | head -n 4)"
    fi
done
[ "$accepted" -ge 5 ] && [ "$refused" -ge 20 ] ||
    fail "found $accepted accepted and $refused refused cases, expected 5 and 20 or more"
exit $status
