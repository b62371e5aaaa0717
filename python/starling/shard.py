"""starling.shard: the rows of a data file that a node of a Starling run trains on.

starlingd and starling-sim split --data among the nodes by --partition (iid, label,
dirichlet:ALPHA, column:K), --nodes and --seed. A training program of your own (starling.Node,
starling.torch) that reads the same file gets the same rows with

    rows = starling.shard("train.csv", format="csv")   # id, nodes, partition, seed: see below
    x, y = features[rows], labels[rows]

The split is libstarling's own (the daemons' code, through the C ABI's starling_partition),
so a worker's rows are exactly the rows a daemon with the same options would take.
"""
import ctypes
import os

import numpy as np

from .node import _check, _options, library


def _from_env(value, env, what, convert=str):
    if value is not None:
        return value
    text = os.environ.get(env)
    if text is None or text == "":
        return None
    try:
        return convert(text)
    except ValueError:
        raise ValueError("starling.shard: %s=%r is not a valid %s" % (env, text, what))


def shard(data, id=None, nodes=None, partition=None, seed=None, args=(), **options):
    """Node `id`'s rows of `data` (a numpy int64 array of 0-based row numbers, ascending; for IDX
    data, `data` is the images file and the rows are image numbers).

    id, nodes, partition and seed default to STARLING_ID, STARLING_NODES, STARLING_PARTITION and
    STARLING_SEED, which launch_local.py --worker sets (--nodes, --partition, --seed); a partition
    or seed given nowhere is starlingd's default (iid, seed 1). Other starlingd options that
    change how the file is read go as keywords (format="csv", label_column=3, features=123) or
    in `args`. Raises ValueError without an id or node count, StarlingError naming the option or
    file otherwise."""
    node_id = _from_env(id, "STARLING_ID", "node id", int)
    count = _from_env(nodes, "STARLING_NODES", "node count", int)
    if node_id is None:
        raise ValueError("starling.shard: no node id: pass id= or set STARLING_ID "
                         "(launch_local.py --worker does)")
    if count is None:
        raise ValueError("starling.shard: no node count: pass nodes= or set STARLING_NODES "
                         "(launch_local.py --worker does)")
    options = dict(options)
    options["data"] = str(data)
    options["nodes"] = int(count)
    chosen = _from_env(partition, "STARLING_PARTITION", "partition")
    if chosen is not None:
        options["partition"] = chosen
    chosen_seed = _from_env(seed, "STARLING_SEED", "seed", int)
    if chosen_seed is not None:
        options["seed"] = chosen_seed
    argv = _options(None, None, None, False, options) + list(args)
    encoded = [a.encode() for a in argv]
    arr = (ctypes.c_char_p * len(encoded))(*encoded)
    lib = library()
    rows = ctypes.POINTER(ctypes.c_int64)()
    n = ctypes.c_int64(0)
    _check(lib.starling_partition(len(encoded), arr, int(node_id), ctypes.byref(rows),
                                  ctypes.byref(n)), "starling.shard")
    try:
        return np.ctypeslib.as_array(rows, shape=(n.value,)).copy() if n.value else \
            np.zeros(0, dtype=np.int64)
    finally:
        lib.starling_free_rows(rows)
