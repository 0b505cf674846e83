# Kernel-set checks. Each one compiles and links a program that really uses an
# intrinsic of the set with the set's own flags, so a compiler that accepts the
# flag but lacks the intrinsics (or an assembler that lacks the encodings) is
# caught here. Each sets an AM_CONDITIONAL and substitutes CFLAGS_<ISA>; the
# flags are used only for that set's convenience library.

# _TESSERA_CHECK_ISA(NAME, FLAGS, INCLUDES, BODY, CONDITIONAL, DEFINE)
AC_DEFUN([_TESSERA_CHECK_ISA], [
  AC_ARG_ENABLE([$1], [AS_HELP_STRING([--disable-$1], [do not build the $1 kernel set])],
                [], [enable_$1=check])
  tessera_have_$1=no
  AS_IF([test "x$enable_$1" != "xno"], [
    AC_MSG_CHECKING([whether $CC builds $1 kernels with $2])
    tessera_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS $2"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([$3], [$4])],
                   [tessera_have_$1=yes], [tessera_have_$1=no])
    CFLAGS=$tessera_save_CFLAGS
    AC_MSG_RESULT([$tessera_have_$1])
    AS_IF([test "x$enable_$1" = "xyes" -a "x$tessera_have_$1" != "xyes"],
          [AC_MSG_ERROR([--enable-$1 given but $CC cannot build $1 kernels])])
  ])
  AS_IF([test "x$tessera_have_$1" = "xyes"], [
    AC_DEFINE([$6], [1], [the $1 kernel set is built])
    tessera_isa_list="$tessera_isa_list $1"
  ])
  AM_CONDITIONAL([$5], [test "x$tessera_have_$1" = "xyes"])
])

AC_DEFUN([TESSERA_CHECK_ISA_AVX2], [
  CFLAGS_AVX2="-mavx2 -mfma -mf16c"
  AC_SUBST([CFLAGS_AVX2])
  _TESSERA_CHECK_ISA([avx2], [$CFLAGS_AVX2], [[#include <immintrin.h>]],
    [[volatile float in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
      __m256 a = _mm256_loadu_ps((const float *)in);
      __m256 b = _mm256_fmadd_ps(a, a, a);
      __m128i h = _mm256_cvtps_ph(b, 0);
      __m256i i = _mm256_add_epi32(_mm256_castps_si256(b), _mm256_castps_si256(a));
      return _mm_extract_epi16(h, 0) + _mm256_extract_epi32(i, 1);]],
    [BUILD_AVX2], [HAVE_KERNELS_AVX2])
])

AC_DEFUN([TESSERA_CHECK_ISA_AVX512], [
  CFLAGS_AVX512="-mavx512f -mavx512bw -mavx512dq -mavx512vl -mfma -mf16c"
  AC_SUBST([CFLAGS_AVX512])
  _TESSERA_CHECK_ISA([avx512], [$CFLAGS_AVX512], [[#include <immintrin.h>]],
    [[volatile float in[16] = {1};
      __m512 a = _mm512_loadu_ps((const float *)in);
      __mmask16 m = _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_GT_OQ);
      __m512 b = _mm512_maskz_fmadd_ps(m, a, a, a);
      __m512i w = _mm512_add_epi16(_mm512_castps_si512(b), _mm512_castps_si512(a));
      __m256 c = _mm512_extractf32x8_ps(_mm512_castsi512_ps(w), 1);
      return (int)_mm512_reduce_add_ps(b) + (int)_mm256_cvtss_f32(c);]],
    [BUILD_AVX512], [HAVE_KERNELS_AVX512])
])

AC_DEFUN([TESSERA_CHECK_ISA_NEON], [
  CFLAGS_NEON=""
  AC_SUBST([CFLAGS_NEON])
  _TESSERA_CHECK_ISA([neon], [$CFLAGS_NEON], [[#include <arm_neon.h>]],
    [[volatile float in[4] = {1, 2, 3, 4};
      float32x4_t a = vld1q_f32((const float *)in);
      float32x4_t b = vfmaq_f32(a, a, a);
      return (int)vaddvq_f32(b);]],
    [BUILD_NEON], [HAVE_KERNELS_NEON])
])

# The emulated avx512 set, for the tests only: the simd/avx512 sources built
# against SIMDe (header-only, "SIMD Everywhere": _mm512_* in portable code) at
# the avx2 set's flags, so the avx512 kernels run on any x86-64 CPU with AVX2.
# Never installed, never chosen by dispatch (simd/avx512/intrinsics.h).
# --disable-avx512-emulated leaves it out where make check would not run it
# (CI's sanitizer and distcheck builds choose their sets): it is the slowest
# library of the tree to compile.
AC_DEFUN([TESSERA_CHECK_AVX512_EMULATED], [
  AC_REQUIRE([TESSERA_CHECK_ISA_AVX2])
  AC_ARG_ENABLE([avx512-emulated],
    [AS_HELP_STRING([--disable-avx512-emulated],
                    [do not build the test-only avx512 set emulated through SIMDe (its tests SKIP)])],
    [], [enable_avx512_emulated=check])
  tessera_avx512_emulated=no
  AS_IF([test "x$enable_avx512_emulated" = "xno"], [tessera_avx512_emulated="no (--disable-avx512-emulated)"],
        [test "x$tessera_have_avx2" = "xyes"], [
    AC_MSG_CHECKING([whether SIMDe emulates AVX-512 (libsimde-dev)])
    tessera_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS $CFLAGS_AVX2"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>]],
      [[volatile float in[16] = {1};
        simde__m512 a = simde_mm512_loadu_ps((const float *)in);
        simde__m512 b = simde_mm512_scalef_ps(simde_mm512_fmadd_ps(a, a, a), a);
        return (int)simde_mm512_cmp_ps_mask(b, a, SIMDE_CMP_GT_OQ);]])],
      [tessera_avx512_emulated=yes])
    CFLAGS=$tessera_save_CFLAGS
    AC_MSG_RESULT([$tessera_avx512_emulated])
  ])
  AS_IF([test "x$tessera_avx512_emulated" = "xyes"],
        [AC_DEFINE([HAVE_KERNELS_AVX512_EMULATED], [1],
                   [the test-only avx512-emulated kernel set is built])])
  AM_CONDITIONAL([BUILD_AVX512_EMULATED], [test "x$tessera_avx512_emulated" = "xyes"])
  # GCC passes that made the set's compile the longest of make check, left
  # out where the compiler has them (Makefile.am says why; clang has none).
  CFLAGS_AVX512_EMULATED=
  AS_IF([test "x$tessera_avx512_emulated" = "xyes"], [
    for tessera_flag in -fno-var-tracking -fno-tree-pre -fno-gcse; do
      AC_MSG_CHECKING([whether $CC accepts $tessera_flag])
      tessera_save_CFLAGS=$CFLAGS
      CFLAGS="$CFLAGS -Werror $tessera_flag"
      AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
        [AC_MSG_RESULT([yes]); CFLAGS_AVX512_EMULATED="$CFLAGS_AVX512_EMULATED $tessera_flag"],
        [AC_MSG_RESULT([no])])
      CFLAGS=$tessera_save_CFLAGS
    done
  ])
  AC_SUBST([CFLAGS_AVX512_EMULATED])
])

# _TESSERA_CHECK_EXTENSION(NAME, PARENT, FLAGS, INCLUDES, BODY, CONDITIONAL, DEFINE)
# An instruction-set extension used by a few kernels of set PARENT (int8 dot
# products): checked only when PARENT is built, with PARENT's flags plus its
# own; its kernels build in a library of their own with FLAGS, and the set
# runs them only where the CPU reports the extension.
AC_DEFUN([_TESSERA_CHECK_EXTENSION], [
  tessera_have_$1=no
  AS_IF([test "x$tessera_have_$2" = "xyes"], [
    AC_MSG_CHECKING([whether $CC builds $1 kernels with $3])
    tessera_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS $3"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([$4], [$5])],
                   [tessera_have_$1=yes], [tessera_have_$1=no])
    CFLAGS=$tessera_save_CFLAGS
    AC_MSG_RESULT([$tessera_have_$1])
  ])
  AS_IF([test "x$tessera_have_$1" = "xyes"], [
    AC_DEFINE([$7], [1], [the $1 kernels of the $2 set are built])
    tessera_isa_list="$tessera_isa_list $2+$1"
  ])
  AM_CONDITIONAL([$6], [test "x$tessera_have_$1" = "xyes"])
])

# The int8 dot-product extensions: AVX512-VNNI (vpdpbusd on zmm), AVX-VNNI
# (its VEX form on ymm: Alder Lake, Zen 5) and the ARMv8.2 dot product (sdot).
AC_DEFUN([TESSERA_CHECK_INT8_EXTENSIONS], [
  AC_REQUIRE([TESSERA_CHECK_ISA_AVX2])
  AC_REQUIRE([TESSERA_CHECK_ISA_AVX512])
  AC_REQUIRE([TESSERA_CHECK_ISA_NEON])
  CFLAGS_AVX512_VNNI="$CFLAGS_AVX512 -mavx512vnni"
  AC_SUBST([CFLAGS_AVX512_VNNI])
  _TESSERA_CHECK_EXTENSION([vnni], [avx512], [$CFLAGS_AVX512_VNNI], [[#include <immintrin.h>]],
    [[volatile int in[16] = {1};
      __m512i a = _mm512_loadu_si512((const void *)in);
      return _mm512_reduce_add_epi32(_mm512_dpbusd_epi32(a, a, a));]],
    [BUILD_AVX512_VNNI], [HAVE_KERNELS_AVX512_VNNI])
  CFLAGS_AVX_VNNI="$CFLAGS_AVX2 -mavxvnni"
  AC_SUBST([CFLAGS_AVX_VNNI])
  _TESSERA_CHECK_EXTENSION([avxvnni], [avx2], [$CFLAGS_AVX_VNNI], [[#include <immintrin.h>]],
    [[volatile int in[8] = {1};
      __m256i a = _mm256_loadu_si256((const void *)in);
      return _mm256_extract_epi32(_mm256_dpbusd_avx_epi32(a, a, a), 0);]],
    [BUILD_AVX_VNNI], [HAVE_KERNELS_AVX_VNNI])
  CFLAGS_NEON_DOT="$CFLAGS_NEON -march=armv8.2-a+dotprod"
  AC_SUBST([CFLAGS_NEON_DOT])
  _TESSERA_CHECK_EXTENSION([dotprod], [neon], [$CFLAGS_NEON_DOT], [[#include <arm_neon.h>]],
    [[volatile int in[4] = {1};
      int32x4_t a = vld1q_s32((const int *)in);
      int8x16_t b = vreinterpretq_s8_s32(a);
      return vaddvq_s32(vdotq_laneq_s32(a, b, b, 1));]],
    [BUILD_NEON_DOT], [HAVE_KERNELS_NEON_DOT])
])
