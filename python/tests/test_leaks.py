"""No memory grows with calls: 10 000 calls (translations, scores,
encodings, refused calls) after a warm-up leave the resident set where it
was, and the memory Python's allocators hold (tracemalloc: every object and
PyMem allocation the module makes) where it was to a few bytes a call."""
import ctypes
import gc
import os
import tracemalloc

import tessera

from conftest import MODEL

PAGE = os.sysconf("SC_PAGE_SIZE")
CALLS = 10000
WARM_UP = 1000
# The resident set catches large leaks only: small ones fill the free
# chunks a call's working memory leaves in the heap (a score's results left
# unfreed, ~300 KiB over CALLS, moved it by 0). So the bytes are counted
# too: tracemalloc's (every Python object and PyMem allocation) and glibc's
# in use (mallinfo2: the library's results, on its threads' arenas). Each
# tolerance is below one byte a call; measured growth without a leak: a few
# hundred bytes of Python's caches.
RESIDENT_TOLERANCE = 256 * 1024
TRACED_TOLERANCE = 8 * 1024
MALLOC_TOLERANCE = 8 * 1024


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                 "uordblks", "fordblks", "keepcost")]


def malloc_in_use():
    """Bytes malloc has handed out and not had back, in every thread's arena
    (glibc's mallinfo2): the library's results included."""
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    info = libc.mallinfo2()
    return info.uordblks + info.hblkhd


def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def test_resident_set_flat_over_10000_calls():
    t = tessera.Translator(MODEL, threads=1, max_memory=64 << 20)
    e = tessera.Encoder(MODEL, threads=1)
    calls = [
        lambda: t.translate_batch(["one hundred five"], [["▁ein"]], beam_size=2,
                                  return_scores=True, return_alignments=True),
        lambda: t.score_batch([["▁one", "▁hundred"]], [[5, 6, 7]]),
        lambda: bytes(memoryview(e.encode_batch([[18, 14, 10]], pooling="mean")[0])),
        lambda: e.encode_batch(["one hundred"])[0].tolist(),
    ]

    def refused():
        try:
            t.translate_batch([[18, 14, 999]], beam_size=2)
        except ValueError:
            return
        raise AssertionError("no ValueError")

    calls.append(refused)

    def run(n):
        for i in range(n):
            calls[i % len(calls)]()

    tracemalloc.start()
    try:
        run(WARM_UP)
        gc.collect()
        before, traced_before, in_use = (resident(), tracemalloc.get_traced_memory()[0],
                                         malloc_in_use())
        run(CALLS)
        gc.collect()
        grown, traced = resident() - before, tracemalloc.get_traced_memory()[0] - traced_before
        in_use = malloc_in_use() - in_use
    finally:
        tracemalloc.stop()
    print("over %d calls: resident set %+d bytes, traced %+d, malloc'd %+d"
          % (CALLS, grown, traced, in_use))
    assert grown < RESIDENT_TOLERANCE
    assert traced < TRACED_TOLERANCE
    assert in_use < MALLOC_TOLERANCE


def test_models_freed():
    """Translators made and dropped: the model goes with the last reference."""
    def make():
        t = tessera.Translator(MODEL, threads=1)
        t.translate_batch([[18]])

    for _ in range(3):
        make()
    gc.collect()
    before = resident()
    for _ in range(30):
        make()
    gc.collect()
    # Each model holds 5.4 MiB of weights: 30 leaked would be 160 MiB.
    assert resident() - before < 4 << 20
