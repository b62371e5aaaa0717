"""Loads libstarling (capi/starling.h) with ctypes and declares its functions.

Where the library is looked for, first hit wins:
  1. $STARLING_LIBRARY: the path of libstarling.so;
  2. $STARLING_BUILD_DIR/capi/libstarling.so (a build tree);
  3. an installed package's own library (cmake --install, the Debian package): the path that
     _installed.py, written at install time, gives relative to this folder;
  4. the build tree beside this source tree (python/../build/capi/libstarling.so);
  5. the system's library path (ctypes.util.find_library("starling")).
"""
import ctypes
import ctypes.util
import os

ABI_VERSION = 2

OK = 0
DONE = 1
TIMEOUT = 2
E_ARGUMENT = -1
E_STATE = -2
E_NODE = -3
E_INTERNAL = -4
FLOAT32 = 1
FLOAT64 = 2

CODE_NAMES = {E_ARGUMENT: "bad argument", E_STATE: "wrong state", E_NODE: "node failed",
              E_INTERNAL: "internal error"}


class Counters(ctypes.Structure):
    _fields_ = [("local_steps", ctypes.c_int64),
                ("exchanges_initiated", ctypes.c_int64),
                ("exchanges_served", ctypes.c_int64),
                ("exchanges_aborted", ctypes.c_int64),
                ("bits_sent", ctypes.c_int64),
                ("step_timeouts", ctypes.c_int64),
                ("step_wait_seconds", ctypes.c_double),
                ("running", ctypes.c_int32),
                ("finished", ctypes.c_int32),
                ("exit_code", ctypes.c_int32),
                ("resumed", ctypes.c_int32)]

    def as_dict(self):
        return {name: getattr(self, name) for name, _ in self._fields_}


def _candidates():
    env = os.environ.get("STARLING_LIBRARY")
    if env:
        yield env
        return
    build = os.environ.get("STARLING_BUILD_DIR")
    if build:
        yield os.path.join(build, "capi", "libstarling.so")
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        from . import _installed
        yield os.path.normpath(os.path.join(here, _installed.LIBRARY))
    except ImportError:  # a source tree: no _installed.py
        pass
    yield os.path.join(here, "..", "..", "build", "capi", "libstarling.so")
    found = ctypes.util.find_library("starling")
    if found:
        yield found


def load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        lib = ctypes.CDLL(path)
        _declare(lib)
        lib.path = path
        return lib
    raise ImportError("starling: libstarling.so not found (tried: %s); build it (cmake --build "
                      "build --target starling) and set STARLING_LIBRARY=/path/to/libstarling.so "
                      "or STARLING_BUILD_DIR=/path/to/build" % (", ".join(tried) or "nothing"))


def _declare(lib):
    node = ctypes.c_void_p
    lib.starling_last_error.restype = ctypes.c_char_p
    lib.starling_last_error.argtypes = []
    lib.starling_create.restype = ctypes.c_int
    lib.starling_create.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                    ctypes.POINTER(node)]
    lib.starling_set_model.restype = ctypes.c_int
    lib.starling_set_model.argtypes = [node, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int]
    for name in ("starling_start", "starling_sync", "starling_stop"):
        getattr(lib, name).restype = ctypes.c_int
        getattr(lib, name).argtypes = [node]
    lib.starling_step.restype = ctypes.c_int
    lib.starling_step.argtypes = [node, ctypes.c_int64]
    lib.starling_iterate.restype = ctypes.c_int
    lib.starling_iterate.argtypes = [node, ctypes.c_int64]
    lib.starling_gradient.restype = ctypes.c_int
    lib.starling_gradient.argtypes = [node, ctypes.c_void_p, ctypes.c_uint64]
    lib.starling_finish.restype = ctypes.c_int
    lib.starling_finish.argtypes = [node, ctypes.c_int64, ctypes.POINTER(ctypes.c_int)]
    lib.starling_get_counters.restype = ctypes.c_int
    lib.starling_get_counters.argtypes = [node, ctypes.POINTER(Counters)]
    lib.starling_destroy.restype = None
    lib.starling_destroy.argtypes = [node]
    lib.starling_partition.restype = ctypes.c_int
    lib.starling_partition.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                       ctypes.c_int32,
                                       ctypes.POINTER(ctypes.POINTER(ctypes.c_int64)),
                                       ctypes.POINTER(ctypes.c_int64)]
    lib.starling_free_rows.restype = None
    lib.starling_free_rows.argtypes = [ctypes.POINTER(ctypes.c_int64)]
