#!/bin/sh
# make check: an Argos Translate package made here (tests/ctranslate2/argos.py:
# SentencePiece trained here, a synthetic int8 CTranslate2 model over its
# pieces, laid out as Argos Translate lays packages out) runs text in, text
# out, as its folder and as the zipped .argosmodel:
#   - translate's text is the reference pipeline's (SentencePiece -> ids ->
#     tools/ctranslate2_reference.py's float64 greedy search -> pieces ->
#     SentencePiece), at compute type f32; at the default, int8 (the
#     weights' own), one line per line, and score within 0.1 + 2 % of the
#     reference's log-probs;
#   - tokenize's pieces are SentencePiece's;
#   - an entry of the zip that would leave its directory is never written,
#     and the unpacked directory is gone afterwards;
#   - a BPE package, a target_prefix, a missing tokenizer, a zip without a
#     package, a broken model inside a zip: one line naming it, exit 1.
# Needs /usr/bin/python3 with numpy, yaml and sentencepiece (else SKIP), and a
# tessera built with SentencePiece (else SKIP: no text) and libzip (else the
# .argosmodel runs must be refused by name, and are checked so).
python_modules="numpy yaml sentencepiece"
. "$(dirname "$0")/convert-lib.sh"
tessera="${TESSERA_TEST_RUNNER:-} $build/tests/tessera-test"

# shellcheck disable=SC2086 # the runner is words
if ! $tessera info | grep -q '^text: SentencePiece'; then
    echo "SKIP: this tessera was built without SentencePiece (no text in or out)"
    exit 77
fi
"$python" "$srcdir/tests/ctranslate2/argos.py" "$work" ||
    { echo "FAIL: tests/ctranslate2/argos.py could not write the package"; exit 1; }
mkdir "$work/tmp"
export TMPDIR="$work/tmp"
zip=yes
# shellcheck disable=SC2086
$tessera info -m "$work/package.argosmodel" >"$work/info" 2>&1 || {
    if grep -q 'built without libzip' "$work/info"; then
        zip=no
        echo "PASS: without libzip, the .argosmodel is refused by name: $(cat "$work/info")"
    else
        fail "info -m package.argosmodel: $(tail -n 1 "$work/info")"
    fi
}

for package in package package.argosmodel; do
    [ "$zip" = yes ] || [ "$package" = package ] || continue
    # shellcheck disable=SC2086
    $tessera translate -m "$work/$package" --compute-type f32 --max-len 20 --threads 1 \
        <"$work/text.in" >"$work/out" 2>"$work/err" || fail "$package: translate: $(cat "$work/err")"
    if cmp -s "$work/out" "$work/text.expected"; then
        echo "PASS: $package: text as the reference pipeline, $(wc -l <"$work/text.in") sentences"
    else
        fail "$package: text differs from the reference: $(diff "$work/out" "$work/text.expected" | head -n 4)"
    fi
    # shellcheck disable=SC2086
    $tessera translate -m "$work/$package" --max-len 20 --threads 1 <"$work/text.in" \
        >"$work/out" 2>"$work/err" || fail "$package: translate at int8: $(cat "$work/err")"
    [ "$(wc -l <"$work/out")" -eq "$(wc -l <"$work/text.in")" ] ||
        fail "$package: translate at int8 printed $(wc -l <"$work/out") lines"
    # shellcheck disable=SC2086
    $tessera score -m "$work/$package" --pieces --threads 1 <"$work/score.in" \
        >"$work/out" 2>"$work/err" || fail "$package: score at int8: $(cat "$work/err")"
    awk 'NR == FNR { want[FNR] = $0; next }
         { n = split($0, g, " "); split(want[FNR], w, " ")
           for (i = 1; i <= n; i++) { d = g[i] - w[i]; if (d < 0) d = -d
               a = w[i] < 0 ? -w[i] : w[i]; if (d > 0.1 + 0.02 * a) bad = 1 } }
         END { exit bad }' "$work/score.expected" "$work/out" &&
        echo "PASS: $package: int8 log-probs within 0.1 + 2 % of the reference" ||
        fail "$package: int8 log-probs: $(head -n 1 "$work/out") against $(head -n 1 "$work/score.expected")"
    # shellcheck disable=SC2086
    $tessera tokenize -m "$work/$package" <"$work/tokenize.in" >"$work/out" 2>"$work/err" ||
        fail "$package: tokenize: $(cat "$work/err")"
    cmp -s "$work/out" "$work/tokenize.expected" && echo "PASS: $package: tokenize as SentencePiece" ||
        fail "$package: tokenize differs from SentencePiece's pieces"
done
[ ! -e "$work/escaped.txt" ] && [ ! -e "$work/tmp/escaped.txt" ] ||
    fail "a zip entry named ../escaped.txt was written"
[ -z "$(ls "$work/tmp")" ] || fail "the unpacked package was left in TMPDIR: $(ls "$work/tmp")"

for expected in "$work"/refuse/*.expected; do
    name=$(basename "$expected" .expected)
    path=$work/refuse/$name
    [ -d "$path" ] || path=$path.argosmodel
    case $path in *.argosmodel) [ "$zip" = yes ] || continue ;; esac
    # shellcheck disable=SC2086
    $tessera info -m "$path" >"$work/out" 2>"$work/err"
    code=$?
    words=$(cat "$expected")
    if [ "$code" -eq 1 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && grep -qF -- "$words" "$work/err" &&
        ! grep -q "$work/tmp" "$work/err"; then
        echo "PASS: $name refused: $(cat "$work/err")"
    else
        fail "$name: expected one line naming '$words' (not the unpacked directory), exit 1; got exit $code: $(cat "$work/err")"
    fi
done
exit $status
