#!/bin/sh
# make check: CTranslate2's own test model (aren-transliteration, binary
# versions 1 and 2, float32, int16 and int8), read as CTranslate2 ships it,
# must do what CTranslate2's own tests say it does (tests/test_ctranslate2.c
# lists each expectation, and what tessera defines otherwise), under every
# kernel set selected ($TESSERA_TEST_SETS, else $TESSERA_TEST_RUN_SETS; unset:
# every set this build and CPU run).
#
# The model is not part of tessera (CTranslate2's, MIT): it is looked for in
# $TESSERA_TEST_CT2_MODELS, else beside the source tree in
# ../shared/models/ctranslate2-tests, else beside the tree a clone of it came
# from (CI tests a fresh clone of the working tree, wherever it puts it).
# Without it this test says SKIP, naming where it looked.
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}
build=${TESSERA_TEST_BUILDDIR:-.}
beside=shared/models/ctranslate2-tests
models=${TESSERA_TEST_CT2_MODELS:-$srcdir/../$beside}
origin=$(git -C "$srcdir" remote get-url origin 2>/dev/null || true)
if [ -z "${TESSERA_TEST_CT2_MODELS:-}" ] && [ ! -d "$models" ] && [ -d "$origin" ]; then
    models=$origin/../$beside
fi
if [ ! -f "$models/v2/aren-transliteration/model.bin" ]; then
    echo "SKIP: CTranslate2's test models are not in $models (set TESSERA_TEST_CT2_MODELS)"
    exit 77
fi
TESSERA_TEST_CT2_MODELS=$(cd "$models" && pwd)
export TESSERA_TEST_CT2_MODELS
# The stages that run make check on some sets only (TESSERA_TEST_RUN_SETS:
# distcheck, the sanitizers) run these cases on those sets only;
# TESSERA_TEST_CT2_SETS, when set, names them for this test alone (.ci/neon:
# the neon set).
if [ -n "${TESSERA_TEST_CT2_SETS:-}" ]; then
    export TESSERA_TEST_SETS="$TESSERA_TEST_CT2_SETS"
elif [ -n "${TESSERA_TEST_RUN_SETS:-}" ] && [ -z "${TESSERA_TEST_SETS:-}" ]; then
    export TESSERA_TEST_SETS="$TESSERA_TEST_RUN_SETS"
fi
echo "CTranslate2's test models: $TESSERA_TEST_CT2_MODELS"
# shellcheck disable=SC2086 # the runner is words
exec ${TESSERA_TEST_PROGRAM_RUNNER:-} "$build/tests/test_ctranslate2"
