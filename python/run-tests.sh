#!/bin/sh
# make check's Python tests: python/tests against the module just built (in
# python/.libs, on the libtessera in .libs), with Debian's /usr/bin/python3
# and python3-pytest; a SKIP by name when either is missing.
builddir=${TESSERA_TEST_BUILDDIR:-.}
srcdir=${TESSERA_TEST_SRCDIR:-.}
python=${TESSERA_TEST_PYTHON:-/usr/bin/python3}
if ! ls "$builddir"/python/.libs/tessera*.so >/dev/null 2>&1; then
    echo "SKIP: the Python module is not built in $builddir/python/.libs"
    exit 77
fi
if ! "$python" -c 'import pytest' 2>/dev/null; then
    echo "SKIP: $python has no pytest (apt-get install python3-pytest)"
    exit 77
fi
PYTHONPATH="$builddir/python/.libs${PYTHONPATH:+:$PYTHONPATH}"
LD_LIBRARY_PATH="$builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# No __pycache__ in the source tree (which distcheck makes read-only).
PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH LD_LIBRARY_PATH PYTHONDONTWRITEBYTECODE
exec "$python" -m pytest -q -p no:cacheprovider "$srcdir/python/tests"
