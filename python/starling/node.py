"""starling.Node: a Starling node in this process, exchanging a NumPy array with its neighbours.

The array is the model; it stays yours. Train it in place as you like, and call step() after
each local step: that is the only moment the node reads and writes the array (the step-boundary
rule of capi/starling.h): merges with neighbours that arrived since the last step are added to
it, and the step is handed to the node. Between two calls nothing else touches it.

Round-based methods (algorithm="dgd", "dpsgd" or "gradient-tracking", with step=...): the node
runs starlingd's own method and asks for your gradients; you give the gradient at each iterate:

    node = starling.Node(x, algorithm="gradient-tracking", step=0.1, iterations=500, ...)
    while node.iterate():          # x now holds the iterate x_k (False: x holds the final model)
        node.gradient(grad_f(x))   # grad f_i(x_k), the model's dtype and size
    node.finish()
"""
import ctypes

import numpy as np

from . import _lib

_LIB = None


def library():
    """The loaded libstarling (ctypes.CDLL); its path is library().path."""
    global _LIB
    if _LIB is None:
        _LIB = _lib.load()
    return _LIB


class StarlingError(RuntimeError):
    """An error from the node, with the node's own message (the option, file, peer or endpoint
    it is about) and its return code (and starlingd's exit code once the node has ended)."""

    def __init__(self, code, message, exit_code=None):
        super().__init__(message)
        self.code = code
        self.exit_code = exit_code


def _check(code, what):
    if code < 0:
        message = library().starling_last_error().decode("utf-8", "replace")
        raise StarlingError(code, "%s: %s" % (what, message or _lib.CODE_NAMES.get(code, code)))
    return code


def _options(cluster, node_id, secret_key, allow_plaintext, options):
    argv = ["starling"]
    if cluster is not None:
        argv += ["--cluster", str(cluster)]
    if node_id is not None:
        argv += ["--id", str(node_id)]
    if secret_key is not None:
        argv += ["--secret-key", str(secret_key)]
    if allow_plaintext:
        argv += ["--allow-plaintext"]
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is not False and value is not None:
            argv += [flag, str(value)]
    return argv


class Node:
    """A node over `model`, a C-contiguous float32 or float64 NumPy array (kept by reference).

    Options are starlingd's (starlingd --help), as keyword arguments (local_steps=4 is
    --local-steps 4) and/or as a list in `args`. --algorithm defaults to swarmsgd and
    --iterations is the budget of local steps. The node starts at once (it binds, connects,
    and resumes from --checkpoint with --resume: the array then holds the checkpoint's model).
    """

    STEP_SLICE_MS = 200  # a blocked step returns to Python this often, so that Ctrl-C works

    def __init__(self, model, cluster=None, id=None, secret_key=None, allow_plaintext=False,
                 args=(), **options):
        if not isinstance(model, np.ndarray):
            raise TypeError("starling.Node: model must be a numpy.ndarray, not %s" %
                            type(model).__name__)
        if model.dtype == np.float32:
            dtype = _lib.FLOAT32
        elif model.dtype == np.float64:
            dtype = _lib.FLOAT64
        else:
            raise TypeError("starling.Node: model dtype %s: float32 or float64" % model.dtype)
        if not model.flags["C_CONTIGUOUS"] or not model.flags["WRITEABLE"]:
            raise ValueError("starling.Node: model must be a writeable, C-contiguous array")
        options.setdefault("algorithm", "swarmsgd")
        argv = _options(cluster, id, secret_key, allow_plaintext, options) + list(args)
        self._lib = library()
        self._model = model  # the node keeps a pointer into it: keep the array alive
        self._handle = ctypes.c_void_p()
        encoded = [a.encode() for a in argv]
        arr = (ctypes.c_char_p * len(encoded))(*encoded)
        _check(self._lib.starling_create(len(encoded), arr, ctypes.byref(self._handle)),
               "starling.Node")
        try:
            _check(self._lib.starling_set_model(self._handle, model.ctypes.data, model.size,
                                                dtype), "starling.Node")
            _check(self._lib.starling_start(self._handle), "starling.Node")
        except BaseException:
            self.close()
            raise
        self.done = False

    @property
    def model(self):
        return self._model

    def step(self, timeout=None):
        """The step boundary: call after each local step on the model. Returns True while the
        node takes steps, False once its budget (--iterations) is done (the array still got the
        merges). Waits while the node waits (SwarmSGD's staleness bound, its progress gate), at
        most `timeout` seconds if given (then raises TimeoutError, nothing changed)."""
        if self.done:
            self.sync()
            return False
        waited = 0.0
        while True:
            code = _check(self._lib.starling_step(self._handle, self.STEP_SLICE_MS),
                          "starling.Node.step")
            if code == _lib.TIMEOUT:
                waited += self.STEP_SLICE_MS / 1000.0
                if timeout is not None and waited >= timeout:
                    raise TimeoutError("starling.Node.step: the node did not take the previous "
                                       "step within %.1f s" % timeout)
                continue
            if code == _lib.DONE:
                self.done = True
                return False
            return True

    def iterate(self, timeout=None):
        """Round-based methods: waits until the node needs the gradient at its next iterate and
        writes it into the array; True. False once --iterations are done (the array holds the
        final model). A dead neighbour makes the node give up after --give-up-s: StarlingError
        with its message. At most `timeout` seconds if given (then TimeoutError, nothing
        changed)."""
        if self.done:
            return False
        waited = 0.0
        while True:
            code = _check(self._lib.starling_iterate(self._handle, self.STEP_SLICE_MS),
                          "starling.Node.iterate")
            if code == _lib.TIMEOUT:
                waited += self.STEP_SLICE_MS / 1000.0
                if timeout is not None and waited >= timeout:
                    raise TimeoutError("starling.Node.iterate: no iterate within %.1f s" % timeout)
                continue
            if code == _lib.DONE:
                self.done = True
                return False
            return True

    def gradient(self, grad):
        """Round-based methods: the gradient at the iterate iterate() wrote (an array of the
        model's dtype and size; copied at once)."""
        grad = np.ascontiguousarray(grad, dtype=self._model.dtype)
        if grad.size != self._model.size:
            raise ValueError("starling.Node.gradient: %d values, the model has %d" %
                             (grad.size, self._model.size))
        _check(self._lib.starling_gradient(self._handle, grad.ctypes.data, grad.size),
               "starling.Node.gradient")

    def sync(self):
        """Adds the merges that arrived since the last step to the array, counting no step."""
        _check(self._lib.starling_sync(self._handle), "starling.Node.sync")

    def finish(self, timeout=None):
        """Waits for the run to end (every node done, or --linger-s), writes the final model into
        the array; returns starlingd's exit code (0). Raises StarlingError if the node failed,
        TimeoutError after `timeout` seconds."""
        exit_code = ctypes.c_int(-1)
        waited = 0.0
        while True:
            code = self._lib.starling_finish(self._handle, self.STEP_SLICE_MS,
                                             ctypes.byref(exit_code))
            if code != _lib.TIMEOUT:
                break
            waited += self.STEP_SLICE_MS / 1000.0
            if timeout is not None and waited >= timeout:
                raise TimeoutError("starling.Node.finish: still running after %.1f s" % timeout)
        if code < 0:
            message = self._lib.starling_last_error().decode("utf-8", "replace")
            raise StarlingError(code, "starling.Node.finish: " + message, exit_code.value)
        return exit_code.value

    def stop(self):
        """Stops now, as SIGINT stops starlingd: a checkpoint (with --checkpoint), a goodbye to
        the neighbours; the array gets the node's model."""
        if self._handle:
            _check(self._lib.starling_stop(self._handle), "starling.Node.stop")

    def counters(self):
        c = _lib.Counters()
        _check(self._lib.starling_get_counters(self._handle, ctypes.byref(c)),
               "starling.Node.counters")
        return c.as_dict()

    def close(self):
        """Stops the node if it runs and frees it. Safe to call twice."""
        if self._handle:
            self._lib.starling_destroy(self._handle)
            self._handle = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
