# The shared part of tests/convert-families.sh and tests/convert-torch-families.sh
# (sourced): where things are, /usr/bin/python3 with numpy and yaml (else
# SKIP), a scratch directory, and the checks both use.
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}
python=${TESSERA_TEST_PYTHON:-/usr/bin/python3}
families=$srcdir/tests/golden/families
convert="$srcdir/tools/tessera-convert"

if ! [ -x "$python" ]; then
    echo "SKIP: $python not found (tools/tessera-convert runs with it)"
    exit 77
fi
for module in numpy yaml; do
    if ! "$python" -c "import $module" >/dev/null 2>&1; then
        echo "SKIP: $python lacks the module '$module' (Debian: python3-$module)"
        exit 77
    fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/convert-families.XXXXXX") || exit 99
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
