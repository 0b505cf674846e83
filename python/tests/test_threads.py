"""Python threads calling one Translator at once: each call takes a free
worker (or waits for one, without the GIL) and gets what a lone call gets."""
import sys
import threading
import time

import tessera

from conftest import MODEL


def test_threads_share_workers(texts):
    t = tessera.Translator(MODEL, workers=2, threads=1)
    assert t.workers == 2
    want = [r.hypotheses for r in t.translate_batch(texts, beam_size=2)]
    scores_want = [r.log_probs for r in t.score_batch(texts, [w[0] for w in want])]
    failures = []

    def work(k):
        try:
            for i in range(k, len(texts), 4):
                got = t.translate_batch([texts[i]], beam_size=2)[0].hypotheses
                assert got == want[i], (i, got, want[i])
                got = t.score_batch([texts[i]], [want[i][0]])[0].log_probs
                assert got == scores_want[i]
        except Exception as e:  # reported by the main thread
            failures.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not failures


def test_calls_wait_for_the_one_worker(texts):
    """More threads than workers: the others wait, none fails."""
    t = tessera.Translator(MODEL, workers=1, threads=1)
    e = tessera.Encoder(MODEL, workers=1, threads=1)
    want = [r.hypotheses[0] for r in t.translate_batch(texts[:6])]
    got = {}

    def work(i):
        got[i] = t.translate_batch([texts[i]])[0].hypotheses[0]
        e.encode_batch([texts[i]])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert [got[i] for i in range(6)] == want


def test_gil_released_during_calls(texts):
    """Another thread runs Python while one call computes. The interpreter
    is told not to take the GIL from a running thread, so the other thread
    can only run when a thread gives the GIL up: the call, if it does."""
    t = tessera.Translator(MODEL, threads=1)
    done = threading.Event()
    ticks = [0]

    def tick():
        while not done.is_set():
            ticks[0] += 1
            time.sleep(0.0001)  # gives the GIL up, so that the main thread goes on

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1000)
    th = threading.Thread(target=tick)
    th.start()
    try:
        while ticks[0] == 0:
            time.sleep(0.001)
        before = ticks[0]
        t.translate_batch(texts, beam_size=4)
        during = ticks[0] - before
    finally:
        done.set()
        th.join()
        sys.setswitchinterval(interval)
    assert during > 0
