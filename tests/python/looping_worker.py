"""A worker for test_launch_interrupt.py, started by launch_local.py --worker: a node with a
budget it never reaches (one step every 10 ms); on SIGTERM/SIGINT it stops its node and says
so. Writes its pid to STARLING_RUN_DIR/pid-K."""
import os
import sys
import time

import numpy as np

import starling

starling.stop_on_signals()
where = starling.launch_options()
with open(os.path.join(os.environ["STARLING_RUN_DIR"], "pid-%d" % where["id"]), "w") as f:
    f.write(str(os.getpid()))
x = np.zeros(16)
node = starling.Node(x, iterations=10 ** 7, **where)
print("training", flush=True)
step = 0
try:
    while node.step():
        x += 1e-3
        step += 1
        time.sleep(0.01)
except KeyboardInterrupt:
    node.stop()
    print("stopped at step %d: %s" % (step, node.counters()), flush=True)
    sys.exit(130)
