#!/usr/bin/env python3
"""Load an HTML file in headless Chromium and say what is wrong with it.

usage: browser_check.py FILE.html   (prints the findings as JSON; exit 0 clean, 1 problems,
                                     77 Chromium cannot start)

Talks to Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe: commands on the
browser's fd 3, answers on its fd 4, each message a JSON text ended by a NUL byte), so there is
no port and no race with other tests. It opens the file, waits for the load event and for every
image to decode, and then asks the page:
  - every <img> is complete, decoded, and has naturalWidth > 0;
  - every link (<a href>, <area href>) is a fragment naming an element of the page (the report
    must be self-contained: a link elsewhere is a broken link once the file is moved or offline);
  - no element loads anything (src/href of script, link, iframe, ...) from outside the page;
and it collects from the protocol every request the page made that is not the file itself or a
data: URI, every failed load, and every script exception. Standard library only.
"""

import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_CANNOT_START = 0, 1, 77
DEFAULT_DEADLINE_S = 120.0  # start-up included; a loaded 2-core machine is slow to start it
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")

# Evaluated in the page once it has loaded: waits for every image to decode, then reports.
PAGE_CHECK = r"""
(async () => {
  const images = Array.from(document.images);
  const decoded = await Promise.all(images.map(i => i.decode().then(() => true, () => false)));
  const result = {images: [], links: [], resources: [], title: document.title,
                  body_text: document.body ? document.body.innerText.length : 0};
  images.forEach((img, k) => result.images.push({
    src: img.getAttribute('src').slice(0, 48), complete: img.complete, decoded: decoded[k],
    naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight}));
  for (const a of document.querySelectorAll('a[href], area[href]')) {
    const href = a.getAttribute('href');
    const ok = href.startsWith('#') && href.length > 1 &&
               document.getElementById(decodeURIComponent(href.slice(1))) !== null;
    result.links.push({href: href.slice(0, 120), ok: ok});
  }
  for (const el of document.querySelectorAll('[src], link[href], [srcset], object[data]')) {
    if (el.tagName === 'IMG' && (el.getAttribute('src') || '').startsWith('data:')) continue;
    result.resources.push(el.tagName + ' ' + (el.getAttribute('src') || el.getAttribute('href') ||
                          el.getAttribute('srcset') || el.getAttribute('data')).slice(0, 120));
  }
  return JSON.stringify(result);
})()
"""


class CannotStart(Exception):
    """Chromium is missing or exited before answering."""


class Failed(Exception):
    """The browser answered, but the check could not be completed."""


def find_chromium():
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class DevToolsPipe(object):
    """A Chromium process and its DevTools pipe."""

    def __init__(self, binary, deadline):
        self.deadline = deadline
        self.profile = tempfile.mkdtemp(prefix="starling-chromium-")
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        # Far above 3 and 4, so that the dup2 onto 3 and 4 below cannot clobber one another.
        high = [os.dup2(fd, 100 + k, inheritable=False)
                for k, fd in enumerate((to_browser_r, from_browser_w))]
        for fd in (to_browser_r, from_browser_w):
            os.close(fd)
        devnull = os.open(os.devnull, os.O_RDWR)
        self.log = tempfile.TemporaryFile()
        argv = [binary, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-sync", "--mute-audio",
                "--user-data-dir=" + self.profile, "--remote-debugging-pipe", "about:blank"]
        try:
            self.pid = os.posix_spawn(binary, argv, os.environ, setsid=True, file_actions=[
                (os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
                (os.POSIX_SPAWN_DUP2, self.log.fileno(), 2),
                (os.POSIX_SPAWN_DUP2, high[0], 3), (os.POSIX_SPAWN_DUP2, high[1], 4)])
        except OSError as e:
            raise CannotStart("%s: %s" % (binary, e))
        finally:
            os.close(devnull)
            for fd in high:
                os.close(fd)
        self.write_fd, self.read_fd = to_browser_w, from_browser_r
        self.buffer = b""
        self.next_id = 0
        self.events = []
        self.exited = None

    def send(self, method, params=None, session=None):
        """Sends a command and returns its result; events that arrive meanwhile are kept."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            try:
                data = data[os.write(self.write_fd, data):]
            except BrokenPipeError:
                raise CannotStart("Chromium closed its DevTools pipe" + self.stderr_tail())
        while True:
            reply = self.receive()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise Failed("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method, session):
        """Waits for an event (keeping it with the others); returns its params."""
        for event in self.events:
            if event.get("method") == method and event.get("sessionId") == session:
                return event.get("params", {})
        while True:
            event = self.receive()
            self.events.append(event)
            if event.get("method") == method and event.get("sessionId") == session:
                return event.get("params", {})

    def receive(self):
        """One message from the browser, before the deadline."""
        while b"\0" not in self.buffer:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise Failed("no answer from Chromium before the deadline" + self.stderr_tail())
            readable, _, _ = select.select([self.read_fd], [], [], min(remaining, 1.0))
            if not readable:
                continue
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise CannotStart("Chromium exited" + self.stderr_tail())
            self.buffer += chunk
        text, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(text.decode("utf-8", "replace"))

    def stderr_tail(self):
        try:
            self.log.seek(0)
            lines = self.log.read().decode("utf-8", "replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return (": " + " | ".join(lines[-5:])) if lines else ""

    def close(self):
        """Asks the browser to quit, then kills its process group; removes the profile."""
        try:
            os.write(self.write_fd, json.dumps({"id": 0, "method": "Browser.close"}).encode()
                     + b"\0")
        except OSError:
            pass
        until = time.monotonic() + 10.0
        while time.monotonic() < until:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.05)
        try:
            os.killpg(self.pid, signal.SIGKILL)  # renderers and helpers of the session too
        except (ProcessLookupError, PermissionError):
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        for fd in (self.write_fd, self.read_fd):
            os.close(fd)
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


def check_html(path, deadline_s=DEFAULT_DEADLINE_S):
    """Returns {"problems": [...], "images": [...], "links": [...], ...} for the page at path.

    Raises CannotStart if Chromium is missing or does not start, Failed if it started but the
    check could not be done (that is a failure of the page or the browser, not a skip).
    """
    binary = find_chromium()
    if binary is None:
        raise CannotStart("no chromium on PATH (Debian: apt-get install chromium)")
    url = "file://" + os.path.abspath(path)
    browser = DevToolsPipe(binary, time.monotonic() + deadline_s)
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget",
                               {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Network", "Runtime", "Log"):
            browser.send(domain + ".enable", session=session)
        navigated = browser.send("Page.navigate", {"url": url}, session=session)
        problems = []
        if navigated.get("errorText"):
            problems.append("navigation to %s failed: %s" % (url, navigated["errorText"]))
            return {"problems": problems, "url": url}
        browser.wait_event("Page.loadEventFired", session)
        evaluated = browser.send("Runtime.evaluate", {"expression": PAGE_CHECK,
                                                      "awaitPromise": True,
                                                      "returnByValue": True}, session=session)
        if "exceptionDetails" in evaluated:
            raise Failed("the page check threw: %s" % evaluated["exceptionDetails"])
        page = json.loads(evaluated["result"]["value"])
        events = [e for e in browser.events if e.get("sessionId") == session]
    finally:
        browser.close()
    for k, img in enumerate(page["images"]):
        if not (img["complete"] and img["decoded"] and img["naturalWidth"] > 0):
            problems.append("image %d (%s...) did not load: complete %s, decoded %s, "
                            "naturalWidth %d" % (k, img["src"], img["complete"], img["decoded"],
                                                 img["naturalWidth"]))
    for link in page["links"]:
        if not link["ok"]:
            problems.append("broken link %r: not a fragment naming an element of the page"
                            % link["href"])
    for resource in page["resources"]:
        problems.append("loads an outside resource: %s" % resource)
    requests = []
    for e in events:
        method, params = e.get("method"), e.get("params", {})
        if method == "Network.requestWillBeSent":
            requested = params.get("request", {}).get("url", "")
            if requested != url and not requested.startswith("data:"):
                requests.append(requested)
                problems.append("requested %s" % requested[:120])
        elif method == "Network.loadingFailed":
            problems.append("a load failed: %s" % params.get("errorText"))
        elif method == "Runtime.exceptionThrown":
            problems.append("script exception: %s" % params.get("exceptionDetails", {}).get(
                "text"))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            problems.append("console error: %s" % params["entry"].get("text"))
    page.update({"problems": problems, "requests": requests, "url": url})
    return page


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    try:
        result = check_html(argv[1])
    except CannotStart as e:
        print("SKIPPED: Chromium cannot start: %s" % e)
        return EXIT_CANNOT_START
    except Failed as e:
        print("browser_check.py: %s: %s" % (argv[1], e), file=sys.stderr)
        return EXIT_PROBLEMS
    print(json.dumps(result, indent=1))
    return EXIT_PROBLEMS if result["problems"] else EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main(sys.argv))
