"""Helpers shared by the launcher's Python tests (launch_progress_test.py, launch_ipc_test.py)."""
import fcntl
import os
import random

_PORT_LOCK = None  # kept open: the lock lasts as long as this process
_PORT_BASE = None


def port_base():
    """A base port no other test holds (the scheme of tests/subprocess.h PortBase); the same one
    for all of this process's runs (one at a time)."""
    global _PORT_LOCK, _PORT_BASE
    if _PORT_LOCK is not None:
        return _PORT_BASE
    slots = 635
    first = os.getpid() % slots
    for k in range(slots):
        candidate = 20000 + ((first + k) % slots) * 20
        f = open("/tmp/starling-test-ports-%d.lock" % candidate, "a+")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        _PORT_LOCK, _PORT_BASE = f, candidate
        return candidate
    raise RuntimeError("no free port base")


def write_libsvm(path, rows, dim, seed):
    """Rows of a noisy linear model (the same for every seed: train and test sets agree)."""
    w = [random.Random(j).gauss(0, 1) for j in range(dim)]
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(rows):
            x = [rng.gauss(0, 1) for _ in range(dim)]
            y = 1 if sum(a * b for a, b in zip(w, x)) + rng.gauss(0, 0.5) > 0 else -1
            f.write("%+d %s\n" % (y, " ".join("%d:%.6f" % (j + 1, v) for j, v in enumerate(x))))
