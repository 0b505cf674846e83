#!/bin/sh
# make check's Python tests when the module is not built: a SKIP by name.
echo "SKIP: the Python module is not built (./configure --enable-python, with python3-dev)"
exit 77
