"""The launcher's console: the monitor's progress line redrawn in place in a terminal, plain lines
otherwise.

The monitor (`starling-probe monitor`, its output a pipe here) prints a plain progress line every
--interval-ms:
    progress  45.2%  7236/16000 steps  850 steps/s  10s left  test_acc 0.8123  rel_gap 0.0432
beside its evaluation lines ("t=...s iter ... objective ..."). In a terminal the launcher shows
the latest progress line as one line redrawn in place, and every other line (warnings, notes,
the launcher's own) above it; the evaluation lines are left to monitor.log, since the progress
line carries the accuracy and the gap. When stdout is not a terminal, every line is printed as it
comes (what scripts and logs want).

Python 3 standard library only.
"""

import re
import shutil
import sys
import threading

PROGRESS_RE = re.compile(r"^progress\s+(?P<share>\d+(?:\.\d+)?)%\s+(?P<done>\d+)/(?P<total>\d+) "
                         r"steps(?P<rest>.*)$")
EVALUATION_RE = re.compile(r"^t=\d+(?:\.\d+)?s\s+iter ")


def parse_progress(line):
    """Returns {"share", "done", "total", and the two-word fields} of a progress line, or None."""
    match = PROGRESS_RE.match(line.strip())
    if not match:
        return None
    fields = {"share": float(match.group("share")), "done": int(match.group("done")),
              "total": int(match.group("total"))}
    for part in match.group("rest").split("  "):
        words = part.split()
        if len(words) == 2:
            if words[1] == "steps/s":
                fields["rate"] = words[0]
            elif words[1] == "left":
                fields["left"] = words[0]
            else:
                fields[words[0]] = words[1]
    return fields


class Console(object):
    """Prints the launcher's lines; in a terminal, keeps the progress line at the bottom."""

    def __init__(self, stream=None, redraw=None):
        self._stream = stream or sys.stdout
        if redraw is None:
            try:
                redraw = self._stream.isatty()
            except (AttributeError, ValueError):
                redraw = False
        self.redraw = redraw
        self._progress = ""  # the progress line on screen (redraw mode), "" if none
        self._lock = threading.Lock()
        self._ok = True      # False once the stream failed (e.g. a closed pipe)

    def _write(self, stream, text):
        if not self._ok:
            return
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):
            self._ok = False

    def _width(self):
        return max(20, shutil.get_terminal_size((100, 24)).columns - 1)

    def monitor_line(self, prefix, line):
        """One line of the monitor's output."""
        if parse_progress(line) is not None:
            self.progress(prefix + line)
        elif self.redraw and EVALUATION_RE.match(line):
            return  # in monitor.log; the progress line shows the accuracy and the gap
        else:
            self.say(prefix + line)

    def progress(self, line):
        """Shows a progress line: redrawn in place, or printed as a plain line."""
        with self._lock:
            if self.redraw:
                self._progress = line[:self._width()]
                self._write(self._stream, "\r\033[K" + self._progress)
            else:
                self._write(self._stream, line + "\n")

    def say(self, text, stream=None):
        """Prints text on lines of its own (to `stream`, stdout by default), above the progress."""
        with self._lock:
            if self.redraw and self._progress:
                self._write(self._stream, "\r\033[K")
            self._write(stream or self._stream, text + "\n")
            if self.redraw and self._progress:
                self._write(self._stream, self._progress)

    def end(self):
        """Leaves the progress line where it is and moves below it: the run's output follows."""
        with self._lock:
            if self.redraw and self._progress:
                self._write(self._stream, "\n")
            self._progress = ""
