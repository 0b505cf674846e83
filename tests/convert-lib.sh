# The shared part of the tests that run Python tools (sourced:
# tests/convert-families.sh, convert-torch-families.sh, text-opus-mt.sh,
# text-tokenize.sh): where things are, /usr/bin/python3 with the modules
# $python_modules names (default numpy and yaml; else SKIP), a scratch
# directory, fail, and the converter's checks.
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}
build=${TESSERA_TEST_BUILDDIR:-.}
python=${TESSERA_TEST_PYTHON:-/usr/bin/python3}
families=$srcdir/tests/golden/families
convert="$srcdir/tools/tessera-convert"

if ! [ -x "$python" ]; then
    echo "SKIP: $python not found (the tools under test run with it)"
    exit 77
fi
for module in ${python_modules:-numpy yaml}; do
    if ! "$python" -c "import $module" >/dev/null 2>&1; then
        echo "SKIP: $python lacks the module '$module' (Debian: python3-$module)"
        exit 77
    fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/$(basename "$0" .sh).XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT INT TERM
status=0
fail() {
    echo "FAIL: $*"
    status=1
}

# same NAME WANT_DIR GOT_DIR: the conversion's files are the committed ones.
same() {
    for f in config.json model.safetensors vocab.src.txt vocab.tgt.txt; do
        cmp -s "$2/$f" "$3/$f" || fail "$1: $f differs from $2/$f"
    done
}


# converts NAME INPUT OUT [FLAGS...]: tessera-convert INPUT OUT FLAGS succeeds.
converts() {
    name=$1 input=$2 out=$3
    shift 3
    "$python" "$convert" "$input" "$out" "$@" 2>"$out.err"
    code=$?
    [ "$code" -eq 0 ] && return 0
    fail "$name: tessera-convert exited $code: $(tail -n 1 "$out.err")"
    return 1
}
