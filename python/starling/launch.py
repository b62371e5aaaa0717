"""What a worker started by examples/launch_local.py --worker needs: its node's options from
the environment the launcher sets, and SIGTERM turned into KeyboardInterrupt so that the
launcher's stop (and Ctrl-C) ends the training loop through the same clean path."""
import os
import signal


def launch_options(cluster=None, id=None, secret_key=None):
    """{"cluster", "id", "secret_key"} from the arguments if given, else from STARLING_CLUSTER,
    STARLING_ID and STARLING_SECRET_KEY; raises ValueError naming what is missing."""
    values = {"cluster": cluster if cluster is not None else os.environ.get("STARLING_CLUSTER"),
              "id": id if id is not None else os.environ.get("STARLING_ID"),
              "secret_key": (secret_key if secret_key is not None
                             else os.environ.get("STARLING_SECRET_KEY"))}
    for key, env in (("cluster", "STARLING_CLUSTER"), ("id", "STARLING_ID")):
        if values[key] is None:
            raise ValueError("no %s: pass --%s or set %s (launch_local.py --worker does)"
                             % (key, key, env))
    values["id"] = int(values["id"])
    return values


def stop_on_signals():
    """SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread, as Ctrl-C does."""
    def handler(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGHUP, handler)
