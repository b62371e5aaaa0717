#!/usr/bin/env python3
"""Runs the documentation's commands as a reader would: docs_run.py {getting-started,quick-start}
BUILD_DIR.

  getting-started  every ```sh block of docs/getting-started/*.md, the pages in file-name order,
                   each page as one bash session (set -euo pipefail), all pages in ONE shared
                   temporary folder, so that a page may use what an earlier one made.
  quick-start      the ```sh blocks of the Quick start section of README.md (up to the next
                   heading of its level or above), as one bash session in a folder of its own.

The commands are the installed names: BUILD_DIR/doc-bin (written here) is first on PATH, with
starlingd, starling-sim and starling-probe (links to the build's binaries) and the launchers
starling-launch (examples/launch_local.py), starling-launch-mpi, starling-launch-ssh and
starling-report (examples/run_report.py) as small wrapper scripts. PYTHONPATH has python/ and
STARLING_LIBRARY the build's libstarling, as an installed package would. Only ```sh blocks run;
```text (output) and ```console (several hosts, sudo) blocks never do.

A failure names the page, the block (its line and first command) and the last lines of the
output. Each page has a deadline (--page-timeout-s, 600 s by default: a page should take well
under a minute; the machine may be loaded); at the deadline its whole process group is killed
and the page fails, saying so. Exit codes: 0 passed, 1 a page failed, 77 skipped (no page).
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import doc_markdown  # noqa: E402

SKIP = 77
OUTPUT_LINES_SHOWN = 80


def write_bin_dir(build_dir):
    """BUILD_DIR/doc-bin: the installed command names over this build and source tree."""
    folder = os.path.join(build_dir, "doc-bin")
    os.makedirs(folder, exist_ok=True)
    node = os.path.join(build_dir, "node")
    for name in ("starlingd", "starling-sim", "starling-probe"):
        target = os.path.join(node, name)
        if not os.access(target, os.X_OK):
            raise SystemExit("docs_run: %s: not built; build it first (cmake --build %s "
                             "--target %s)" % (target, build_dir, name))
        link = os.path.join(folder, name)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(target, link)
    examples = os.path.join(SOURCE_DIR, "examples")
    wrappers = {
        "starling-launch": '/usr/bin/python3 "%s/launch_local.py" --bin-dir "%s"'
                           % (examples, node),
        "starling-launch-mpi": 'bash "%s/launch_mpi.sh" --starlingd "%s/starlingd"'
                               % (examples, node),
        "starling-launch-ssh": 'bash "%s/launch_ssh.sh" --starlingd "%s/starlingd"'
                               % (examples, node),
        "starling-report": '/usr/bin/python3 "%s/run_report.py"' % examples,
    }
    for name, command in wrappers.items():
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n# %s as installed, over this build (tests/docs_run.py)\n"
                    "exec %s \"$@\"\n" % (name, command))
        os.chmod(path, 0o755)
    return folder


def sh_blocks(page, lines=None):
    """(first line, text) of the ```sh blocks of a page (or of its lines numbered `lines`)."""
    return [(first, text) for language, first, text in page.blocks
            if language == "sh" and (lines is None or first in lines)]


def quick_start_blocks(readme):
    """The ```sh blocks of the Quick start section of README.md."""
    headings = list(readme.headings())
    start = next(((n, level) for n, level, text in headings
                  if re.search(r"\bquick start\b", text, re.I)), None)
    if start is None:
        return None
    end = next((n for n, level, _ in headings if n > start[0] and level <= start[1]),
               len(readme.lines) + 1)
    return sh_blocks(readme, range(start[0], end))


def script_for(blocks):
    """One bash script running the blocks in order; an ERR trap names the failing block."""
    out = ["set -Eeuo pipefail",
           "trap '__rc=$?; echo \"docs_run: FAILED in block $__block (exit code $__rc): "
           "$BASH_COMMAND\" >&2' ERR"]
    for index, (first, text) in enumerate(blocks, 1):
        out.append("__block=%d" % index)
        out.append("echo \"docs_run: --- block %d (line %d) ---\" >&2" % (index, first))
        out.append(text)
    out.append("echo 'docs_run: page done' >&2")
    return "\n".join(out) + "\n"


def run_page(name, blocks, cwd, env, timeout_s):
    """Runs one page's blocks; returns None or the failure's description."""
    script = script_for(blocks)
    started = time.monotonic()
    process = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        timed_out = True
    finally:
        try:  # background jobs the page left behind
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    elapsed = time.monotonic() - started
    text = output.decode(errors="replace")
    print("docs_run: %s: %s in %.1f s" % (name, "timed out" if timed_out else
                                          "exit code %d" % process.returncode, elapsed))
    if not timed_out and process.returncode == 0:
        return None
    block = re.findall(r"docs_run: FAILED in block (\d+)", text) or \
        re.findall(r"docs_run: --- block (\d+)", text)
    index = int(block[-1]) if block else 1
    first, body = blocks[index - 1]
    failed = re.findall(r"docs_run: FAILED in block \d+ \(exit code \d+\): (.*)", text)
    command = ("the command `%s`" % failed[-1]) if failed else \
        ("starting `%s`" % next((l for l in body.splitlines() if l.strip()), ""))
    why = ("did not finish within %d s (a page should take well under a minute; its process "
           "group was killed)" % timeout_s) if timed_out else \
        "exit code %d" % process.returncode
    tail = text.splitlines()[-OUTPUT_LINES_SHOWN:]
    return ("%s, block %d of %d (line %d; %s): %s.\nThe page's last %d lines of "
            "output:\n%s" % (name, index, len(blocks), first, command, why, len(tail),
                             "\n".join("    " + line for line in tail)))


def environment(build_dir, bin_dir):
    env = dict(os.environ)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.path.join(SOURCE_DIR, "python") + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["STARLING_LIBRARY"] = os.path.join(build_dir, "capi", "libstarling.so")
    # The centralized reference's cache (--reference-optimum auto) stays in the build folder.
    env["XDG_CACHE_HOME"] = os.path.join(build_dir, "test-cache")
    return env


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("getting-started", "quick-start"))
    parser.add_argument("build_dir")
    parser.add_argument("--page-timeout-s", type=int, default=600)
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary folder (its path is printed)")
    args = parser.parse_args()
    build_dir = os.path.abspath(args.build_dir)
    if args.mode == "getting-started":
        folder = os.path.join(SOURCE_DIR, "docs", "getting-started")
        names = sorted(f for f in os.listdir(folder) if f.endswith(".md")) \
            if os.path.isdir(folder) else []
        pages = [("docs/getting-started/" + n,
                  sh_blocks(doc_markdown.Page(os.path.join(folder, n), SOURCE_DIR)))
                 for n in names]
    else:
        readme = doc_markdown.Page(os.path.join(SOURCE_DIR, "README.md"), SOURCE_DIR)
        blocks = quick_start_blocks(readme)
        if blocks is None:
            print("docs_run: README.md has no \"Quick start\" heading; nothing to run")
            return 1
        pages = [("README.md \"Quick start\"", blocks)]
    pages = [(name, blocks) for name, blocks in pages if blocks]
    if not pages:
        print("docs_run: no ```sh block to run (%s); skipped" % args.mode)
        return SKIP
    env = environment(build_dir, write_bin_dir(build_dir))
    work = tempfile.mkdtemp(prefix="starling-docs-")
    print("docs_run: running %d page(s) in %s" % (len(pages), work))
    for name, blocks in pages:
        failure = run_page(name, blocks, work, env, args.page_timeout_s)
        if failure:
            print("docs_run: FAILED: " + failure)
            print("docs_run: the folder the pages ran in is kept: %s" % work)
            print("What to do: run the page's commands by hand with %s first on PATH, then fix "
                  "the page (or the code, if the page says what the code should do)."
                  % os.path.join(build_dir, "doc-bin"))
            return 1
    if not args.keep:
        subprocess.run(["rm", "-rf", work])
    print("docs_run: %d page(s) passed" % len(pages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
