"""The daemons' warnings, relayed to the launcher's console once per kind.

A daemon's warnings (features that look unscaled, a neighbour it waits for, an address it cannot
connect to, ...) go to its own log, RUN_DIR/node-K.log, which a user of the launcher does not
read while the run looks fine: a run with unscaled features ends with a poor result and nothing
on the console says why. DaemonWarnings reads the logs as they grow and hands over each warning
whose kind was not shown yet. The kind is the text with its numbers replaced, so that "waiting
for node 2 at step 40" and "... node 3 at step 41" are one kind: 16 nodes repeating a line every
few seconds show it once, with the number of nodes that said it counted at the end.
"""

import os
import re

WARNING_MARK = "] warning: "
MONITOR_WARNING_MARK = "monitor: warning: "
# "node 3: " at the start of a warning's text: the node that says it, named by the relay.
SELF_PREFIX = re.compile(r"^node \d+: ")
NUMBER = re.compile(r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?")
MAX_KINDS = 10        # kinds shown; later kinds are only counted
MAX_LINE_BYTES = 1 << 16  # a longer line is cut (a log is read, not trusted to be short)
MAX_READ_BYTES = 1 << 20  # read from one log per call; the rest is read at the next


def warning_text(line):
    """The text of a daemon's warning line without its time stamp, tag and own node, or None."""
    at = line.find(WARNING_MARK)
    if at < 0:
        return None
    return SELF_PREFIX.sub("", line[at + len(WARNING_MARK):].strip())


def warning_kind(text):
    """The text with every number replaced by '#'."""
    return NUMBER.sub("#", text)


class DaemonWarnings(object):
    """Follows the logs of the nodes; new() returns [(node, text)] of warnings of new kinds."""

    def __init__(self, log_paths):
        self.log_paths = log_paths
        self.offsets = [0] * len(log_paths)
        self.partial = [b""] * len(log_paths)
        self.nodes_by_kind = {}  # kind -> set of nodes that said it
        self.shown = []          # kinds shown, in order
        self.unshown = 0         # warnings of kinds beyond MAX_KINDS

    def _new_lines(self, node):
        try:
            with open(self.log_paths[node], "rb") as log:
                log.seek(self.offsets[node])
                data = log.read(MAX_READ_BYTES)
        except OSError:
            return []
        self.offsets[node] += len(data)
        lines = (self.partial[node] + data).split(b"\n")
        self.partial[node] = lines.pop()[:MAX_LINE_BYTES]
        return [l[:MAX_LINE_BYTES].decode("utf-8", "replace") for l in lines]

    def note_shown(self, text):
        """Takes a warning printed elsewhere (the monitor's, which reads the same data) as shown."""
        self.nodes_by_kind.setdefault(warning_kind(text), set()).add(-1)

    def new(self):
        """Reads what the logs gained; returns the warnings of kinds not seen before."""
        found = []
        for node in range(len(self.log_paths)):
            for line in self._new_lines(node):
                text = warning_text(line)
                if text is None:
                    continue
                kind = warning_kind(text)
                nodes = self.nodes_by_kind.setdefault(kind, set())
                first = not nodes
                nodes.add(node)
                if not first:
                    continue
                if len(self.shown) < MAX_KINDS:
                    self.shown.append(kind)
                    found.append((node, text))
                else:
                    self.unshown += 1
        return found

    def summary(self):
        """A line saying that warnings were shown and where all of them are, or None."""
        if not self.shown:
            return None
        more = (", and %d of further kinds" % self.unshown) if self.unshown else ""
        return ("the daemons warned: %d kinds shown above once each%s; every warning is in the "
                "node-K.log files of the run folder" % (len(self.shown), more))
