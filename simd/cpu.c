/* CPU feature detection. x86: CPUID for what the core implements, XGETBV for
 * what the OS saves on a context switch (a set is usable only with both).
 * AArch64: the kernel's hwcaps (Linux getauxval, FreeBSD elf_aux_info) or
 * sysctl on macOS; Advanced SIMD is architectural on AArch64, so the checks
 * confirm rather than gate it. */
#include "simd/cpu.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long read_xcr0(void)
{
    unsigned int lo, hi;
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static void detect(tsr_cpu_features *f)
{
    unsigned int a, b, c, d;
#if defined(__x86_64__)
    f->arch = "x86_64";
#else
    f->arch = "i386";
#endif
    if (__get_cpuid(0, &a, &b, &c, &d)) {
        memcpy(f->vendor, &b, 4);
        memcpy(f->vendor + 4, &d, 4);
        memcpy(f->vendor + 8, &c, 4);
        f->vendor[12] = '\0';
    }
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return;
    /* The display family adds the extended family to 15; the display model
     * takes the extended model's 4 bits above the base for families 6 and
     * 15 and up (Intel's and AMD's manuals agree). */
    f->family = (a >> 8) & 0xf;
    f->model = (a >> 4) & 0xf;
    if (f->family == 0xf)
        f->family += (a >> 20) & 0xff;
    if (f->family == 0x6 || f->family >= 0xf)
        f->model |= ((a >> 16) & 0xf) << 4;
    int osxsave = (c >> 27) & 1;
    int cpu_avx = (c >> 28) & 1, cpu_fma = (c >> 12) & 1, cpu_f16c = (c >> 29) & 1;
    if (!osxsave)
        return;
    unsigned long long xcr0 = read_xcr0();
    int os_ymm = (xcr0 & 0x6) == 0x6;    /* XMM and YMM state */
    int os_zmm = (xcr0 & 0xe6) == 0xe6;  /* plus opmask, ZMM_Hi256, Hi16_ZMM */
    if (!os_ymm)
        return;
    f->avx = cpu_avx;
    f->fma = cpu_fma;
    f->f16c = cpu_f16c;
    if (__get_cpuid_max(0, NULL) < 7)
        return;
    __cpuid_count(7, 0, a, b, c, d);
    f->avx2 = (b >> 5) & 1;
    const unsigned int leaf7_subleaves = a;
    const unsigned int leaf7_b = b, leaf7_c = c;
    if (leaf7_subleaves >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        f->avxvnni = f->avx2 && ((a >> 4) & 1);
    }
    b = leaf7_b;
    c = leaf7_c;
    if (!os_zmm)
        return;
    f->avx512f = (b >> 16) & 1;
    f->avx512dq = (b >> 17) & 1;
    f->avx512bw = (b >> 30) & 1;
    f->avx512vl = (b >> 31) & 1;
    f->avx512vnni = (c >> 11) & 1;
}

#elif defined(__aarch64__)
#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
static int has_asimd(void) { return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0; }
static int has_dotprod(void) { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }
#elif defined(__FreeBSD__)
#include <sys/auxv.h>
#include <machine/elf.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20) /* as on Linux: the AArch64 hwcap bit */
#endif
static int has_asimd(void)
{
    unsigned long hwcap = 0;
    if (elf_aux_info(AT_HWCAP, &hwcap, sizeof hwcap) != 0)
        return 1; /* Advanced SIMD is mandatory in AArch64 */
    return (hwcap & HWCAP_ASIMD) != 0;
}
static int has_dotprod(void)
{
    unsigned long hwcap = 0;
    if (elf_aux_info(AT_HWCAP, &hwcap, sizeof hwcap) != 0)
        return 0;
    return (hwcap & HWCAP_ASIMDDP) != 0;
}
#elif defined(__APPLE__)
#include <sys/sysctl.h>
static int has_asimd(void)
{
    int v = 0;
    size_t len = sizeof v;
    if (sysctlbyname("hw.optional.AdvSIMD", &v, &len, NULL, 0) != 0)
        return 1;
    return v != 0;
}
static int has_dotprod(void)
{
    int v = 0;
    size_t len = sizeof v;
    if (sysctlbyname("hw.optional.arm.FEAT_DotProd", &v, &len, NULL, 0) != 0)
        return 0;
    return v != 0;
}
#else
static int has_asimd(void) { return 1; }
static int has_dotprod(void) { return 0; }
#endif
static void detect(tsr_cpu_features *f)
{
    f->arch = "aarch64";
    f->neon = has_asimd();
    f->neon_dot = f->neon && has_dotprod();
}

#else
static void detect(tsr_cpu_features *f) { f->arch = "other"; }
#endif

static tsr_cpu_features features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

static void detect_once(void) { detect(&features); }

const tsr_cpu_features *tsr_cpu_features_get(void)
{
    /* Once, whichever thread asks first: two threads asking at once would
     * otherwise race on the struct (found reading it, issue 37). */
    pthread_once(&features_once, detect_once);
    return &features;
}

#define FEATURE(field, what) {#field, offsetof(tsr_cpu_features, field), what}
const tsr_cpu_feature tsr_cpu_feature_list[] = {
    FEATURE(avx, NULL),        FEATURE(avx2, NULL),       FEATURE(fma, NULL),
    FEATURE(f16c, NULL),       FEATURE(avx512f, NULL),    FEATURE(avx512bw, NULL),
    FEATURE(avx512dq, NULL),   FEATURE(avx512vl, NULL),   FEATURE(avx512vnni, NULL),
    FEATURE(avxvnni, NULL),    FEATURE(neon, "AArch64 Advanced SIMD"),
    {"dotprod", offsetof(tsr_cpu_features, neon_dot), "ARMv8.2 dot product"},
};
#undef FEATURE
const size_t tsr_cpu_feature_count = sizeof tsr_cpu_feature_list / sizeof tsr_cpu_feature_list[0];

const tsr_cpu_feature *tsr_cpu_feature_find(const char *name, size_t len)
{
    for (size_t i = 0; i < tsr_cpu_feature_count; i++)
        if (strlen(tsr_cpu_feature_list[i].name) == len &&
            strncmp(tsr_cpu_feature_list[i].name, name, len) == 0)
            return &tsr_cpu_feature_list[i];
    return NULL;
}

int tsr_cpu_has(const tsr_cpu_features *f, const tsr_cpu_feature *feature)
{
    return *(const int *)((const char *)f + feature->offset) != 0;
}

void tsr_cpu_features_describe(const tsr_cpu_features *f, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < tsr_cpu_feature_count; i++) {
        if (!tsr_cpu_has(f, &tsr_cpu_feature_list[i]))
            continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? " " : "",
                         tsr_cpu_feature_list[i].name);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
    if (used == 0)
        snprintf(buf, len, "(none beyond the baseline)");
}
