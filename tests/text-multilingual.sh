#!/bin/sh
# make check: the multilingual fixtures (tests/golden/families/hf-nllb-*,
# hf-m2m100-*, hf-mbart*) on text, end to end: `tessera translate -m DIR`
# with the fixture's languages (languages.flags) of translate.text.in, text in
# and text out through the converted SentencePiece model and vocabulary, equals
# translate.text.expected, which tools/make_family_golden_hf_m2m100.py made
# with the family's own tokenizer semantics (NllbTokenizer, M2M100Tokenizer,
# MBart50Tokenizer, MBartTokenizer), the float64 reference and the
# tokenizer's decoding (README-hf-m2m100.md there); at --batch 1 and 4, on 1
# and 2 threads. Exit 77 (SKIP) when tessera reads no
# text (built without SentencePiece). Every tessera command runs behind the
# words of $TESSERA_TEST_RUNNER (qemu in a cross build).
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}
build=${TESSERA_TEST_BUILDDIR:-.}
tessera=$build/tests/tessera-test
[ -x "$tessera" ] || tessera=$build/tessera
runner=${TESSERA_TEST_RUNNER:-}
families=$srcdir/tests/golden/families

if ! $runner "$tessera" info 2>/dev/null | grep -q '^text: SentencePiece'; then
    echo "SKIP: $tessera was built without SentencePiece ($($runner "$tessera" info 2>/dev/null |
        grep '^text:'))"
    exit 77
fi
status=0
found=0
for fixture in "$families"/hf-*; do
    [ -f "$fixture/translate.text.in" ] || continue
    found=$((found + 1))
    name=$(basename "$fixture")
    # shellcheck disable=SC2046 # the flags are words
    set -- $(cat "$fixture/languages.flags")
    for run in "1 1" "4 2"; do
        batch=${run% *} threads=${run#* }
        got=$($runner "$tessera" translate -m "$fixture" "$@" --max-len 20 --batch "$batch" \
            --threads "$threads" <"$fixture/translate.text.in" 2>&1)
        if [ "$got" = "$(cat "$fixture/translate.text.expected")" ]; then
            echo "PASS: $name: text in, text out (--batch $batch, --threads $threads)"
        else
            echo "FAIL: $name --batch $batch --threads $threads: got"
            echo "$got" | head -n 6
            status=1
        fi
    done
done
[ "$found" -ge 5 ] || { echo "FAIL: $found text fixtures under $families, expected 5"; status=1; }
exit "$status"
