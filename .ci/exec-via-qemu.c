/*
 * For the test runs under qemu user-mode emulation (.ci/neon, .ci/no-avx512):
 * makes an execve of a GUEST_MACHINE binary (-DGUEST_MACHINE=EM_AARCH64 or
 * EM_X86_64) start qemu running it. Criterion runs each test in a worker it
 * starts by exec'ing its own binary; without this the worker of an emulated
 * program would run natively (x86-64 on x86-64: on the real CPU, defeating
 * the point) or not at all (AArch64 on x86-64: no binfmt_misc entry here, and
 * adding one would change the whole machine).
 *
 * Loaded into every emulated test program through LD_PRELOAD, given to qemu
 * with -E so that qemu itself never sees it. It takes LD_PRELOAD out of the
 * environment at start, so the native programs the tests spawn (qemu for the
 * tessera command) do not inherit it, and passes it on explicitly to each
 * emulated program it starts. $TESSERA_QEMU is the qemu to run;
 * $TESSERA_QEMU_CPU, when set, its -cpu model.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef GUEST_MACHINE
#error "build with -DGUEST_MACHINE=EM_AARCH64 (or EM_X86_64)"
#endif

static char preload[4096];

__attribute__((constructor)) static void take_preload(void)
{
    const char *p = getenv("LD_PRELOAD");
    if (p) {
        snprintf(preload, sizeof preload, "LD_PRELOAD=%s", p);
        unsetenv("LD_PRELOAD");
    }
}

static int is_guest_elf(const char *path)
{
    Elf64_Ehdr h;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t got = read(fd, &h, sizeof h);
    close(fd);
    return got == (ssize_t)sizeof h && memcmp(h.e_ident, ELFMAG, SELFMAG) == 0 &&
           h.e_machine == GUEST_MACHINE;
}

int execve(const char *path, char *const argv[], char *const envp[])
{
    int (*real_execve)(const char *, char *const[], char *const[]) =
        (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execve");
    const char *qemu = getenv("TESSERA_QEMU");
    const char *cpu = getenv("TESSERA_QEMU_CPU");
    if (!qemu || !is_guest_elf(path))
        return real_execve(path, argv, envp);

    size_t n = 0;
    while (argv[n])
        n++;
    const char **args = calloc(n + 10, sizeof *args);
    if (!args)
        return -1;
    size_t k = 0;
    args[k++] = qemu;
    if (cpu && *cpu) {
        args[k++] = "-cpu";
        args[k++] = cpu;
    }
    if (preload[0]) {
        args[k++] = "-E";
        args[k++] = preload;
    }
    args[k++] = "-0";
    args[k++] = n ? argv[0] : path;
    args[k++] = path;
    for (size_t i = 1; i < n; i++)
        args[k++] = argv[i];
    args[k] = NULL;
    return real_execve(qemu, (char *const *)args, envp);
}
