#!/bin/sh
# make check: the emulated avx512 set must hold no AVX-512 instruction, or
# its tests would prove nothing about CPUs without AVX-512 (and would crash
# on them). Disassembles the set's objects and looks for what only AVX-512
# (EVEX) code has: zmm registers, opmask registers, the upper 16 vector
# registers, embedded broadcasts. Exits 77 (SKIP) when the emulated set was
# not built or objdump is missing.
set -u
build=${TESSERA_TEST_BUILDDIR:-.}
objects=$(find "$build/simd/avx512" -name 'libkernels_avx512_emulated_la-*.o' 2>/dev/null)
if [ -z "$objects" ]; then
    echo "SKIP: the emulated avx512 set is not built here (no SIMDe, or not x86-64)"
    exit 77
fi
if ! command -v objdump >/dev/null 2>&1; then
    echo "SKIP: objdump (binutils) is not installed"
    exit 77
fi
# shellcheck disable=SC2086 # one word per object
found=$(objdump -d --no-show-raw-insn $objects |
        grep -E '%zmm|%k[0-7]|%[xy]mm(1[6-9]|2[0-9]|3[01])\b|\{1to[0-9]+\}' | head -5)
if [ -n "$found" ]; then
    echo "AVX-512 instructions in the emulated avx512 set:" >&2
    echo "$found" >&2
    exit 1
fi
echo "the emulated avx512 set: $(echo "$objects" | wc -l) objects, no AVX-512 instruction"
