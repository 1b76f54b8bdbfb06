"""The documentation site builds with warnings as errors, every page renders in a real
headless browser, and every internal link and anchor resolves.

The site is built once for this module (``mkdocs build --strict`` into a temporary folder)
and served on 127.0.0.1; headless Chromium opens every page and returns the DOM after
the page's scripts ran. Each page must have a title and an ``<h1>``, show no
unrendered directive, log no script error, and link only to pages, files and anchors
that exist. The API reference must document every public name of the public modules.

Needs the ``docs`` dependency group (``make docs``) and Debian's ``chromium``
(``make docs-browser``); without them the tests skip, or fail with
``FSMEMORY_REQUIRE_SERVICES=1``. The code blocks of the pages are run by
``tests/test_readme.py``.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import importlib
import importlib.util
import json
import os
import pkgutil
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

import pytest

import fsmemory
from fsmemory.testing.services import require_services
from tests import docs_site

ROOT = Path(__file__).resolve().parents[1]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: the modules whose ``__all__`` the API reference documents, name by name
REFERENCED_MODULES = (
    "fsmemory",
    "fsmemory.errors",
    "fsmemory.memory",
    "fsmemory.fs",
    "fsmemory.fs.s3",
    "fsmemory.fs.gcs",
    "fsmemory.fs.azure",
    "fsmemory.snapshot",
    "fsmemory.agent",
    "fsmemory.agent.events",
    "fsmemory.agent.policies",
    "fsmemory.agent.strategies",
    "fsmemory.agent.tools",
    "fsmemory.store",
    "fsmemory.sanitizers",
    "fsmemory.export",
    "fsmemory.integrations.mcp",
    "fsmemory.integrations.langgraph",
    "fsmemory.implementations",
    "fsmemory.implementations.redis",
)
#: public subpackages and modules left out of the reference, and why
UNREFERENCED = {
    "fsmemory.cli": "the command line, documented by its --help on the CLI page",
    "fsmemory.testing": "test fixtures and conformance suites for backend authors",
    "fsmemory.tools": "the old home of fsmemory.agent.tools' functions",
    "fsmemory.integrations": "a namespace: its modules are referenced one by one",
}
#: HTML elements without an end tag
VOID_ELEMENTS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}
    | {"track", "wbr"}
)
#: what a rendered page must not show: an unrendered mkdocstrings directive, a CLI
#: help marker the build hook did not replace, an autorefs link that did not resolve
LEFTOVERS = re.compile(r"^:::\s|fsmemory-help:|\]\[fsmemory\.", re.M)


def _skip_or_fail(reason: str) -> None:
    if require_services():
        pytest.fail(f"{reason} (FSMEMORY_REQUIRE_SERVICES=1)")
    pytest.skip(reason)


def find_browser() -> str | None:
    """The headless browser to use: ``$FSMEMORY_BROWSER``, else Chromium on PATH."""
    configured = os.environ.get("FSMEMORY_BROWSER")
    if configured:
        return configured
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class Page:
    """What the browser showed of one page."""

    url: str
    title: str = ""
    h1: list[str] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    links: list[str] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    html_classes: str = ""
    text: str = ""
    console_errors: list[str] = field(default_factory=list)


class _DomReader(HTMLParser):
    def __init__(self, page: Page) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page
        self.stack: list[str] = []
        self.text: list[str] = []
        self.visible: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if "id" in values:
            self.page.ids.add(values["id"])
        if tag == "a" and "name" in values:
            self.page.ids.add(values["name"])
        if tag == "a" and "href" in values:
            self.page.links.append(values["href"])
        if tag in ("script", "img") and values.get("src"):
            self.page.resources.append(values["src"])
        if tag == "link" and values.get("rel") in ("stylesheet", "icon") and "href" in values:
            self.page.resources.append(values["href"])
        if tag == "html":
            self.page.html_classes = values.get("class", "")
        if tag not in VOID_ELEMENTS:
            self.stack.append(tag)
            if tag in ("title", "h1"):
                self.text = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("title", "h1"):
            words = " ".join("".join(self.text).split()).replace("¶", "").strip()
            if tag == "title":
                self.page.title = words
            else:
                self.page.h1.append(words)
        if tag in self.stack:
            while self.stack.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if "script" not in self.stack and "style" not in self.stack:
            self.visible.append(data)

    def handle_comment(self, data: str) -> None:
        self.visible.append(f"<!--{data}-->")  # a marker left in a comment shows here

    def close(self) -> None:
        super().close()
        self.page.text = "".join(self.visible)


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe: one browser process
    for every page, no driver and no package beyond the browser itself.

    Chromium reads commands from its fd 3 and writes replies and events to its fd 4,
    each a JSON object ended by a NUL byte.
    """

    def __init__(self, executable: str) -> None:
        self.profile = tempfile.TemporaryDirectory(prefix="fsmemory-browser-")
        to_browser, self._commands = os.pipe()
        self._replies, from_browser = os.pipe()
        # the shell moves the pipes to fds 3 and 4, points stdin/stdout at /dev/null, then becomes
        # the browser (no preexec_fn: this process has threads)
        self.process = subprocess.Popen(
            [
                "sh",
                "-c",
                'exec "$0" "$@" 3<&0 4>&1 </dev/null >/dev/null',
                executable,
                "--headless",
                "--no-sandbox",  # required as root; the pages are ours, from loopback
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--disable-extensions",
                "--remote-debugging-pipe",
                f"--user-data-dir={self.profile.name}",
                "about:blank",
            ],
            stdin=to_browser,
            stdout=from_browser,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        self.call("Page.enable", session=self.session)
        self.call("Runtime.enable", session=self.session)

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._replies], [], [], max(left, 0))
            if not ready:
                raise TimeoutError("the browser did not answer in time")
            chunk = os.read(self._replies, 1 << 16)
            if not chunk:
                raise RuntimeError(f"the browser exited ({self.process.poll()})")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def call(
        self, method: str, *, session: str | None = None, timeout: float = 30, **params: Any
    ) -> dict[str, Any]:
        """Send one command and return its result; events meanwhile go to ``events``."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 30) -> dict[str, Any]:
        """The first event named ``method`` since ``events`` was cleared (taken out of
        ``events``; the other events stay there)."""
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    def open(self, url: str) -> Page:
        """Load ``url``, let its scripts run, and return what it rendered."""
        self.events.clear()
        self.call("Page.navigate", session=self.session, url=url)
        self.wait_for("Page.loadEventFired")
        # a round trip through the page's event loop: scripts started at load have run
        self.call(
            "Runtime.evaluate",
            session=self.session,
            expression="new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))",
            awaitPromise=True,
        )
        dom = self.call(
            "Runtime.evaluate",
            session=self.session,
            expression="document.documentElement.outerHTML",
            returnByValue=True,
        )["result"]["value"]
        page = Page(url)
        reader = _DomReader(page)
        reader.feed(dom)
        reader.close()
        for event in self.events:
            if event.get("method") == "Runtime.exceptionThrown":
                details = event["params"]["exceptionDetails"]
                page.console_errors.append(
                    details.get("exception", {}).get("description") or details.get("text", "")
                )
            elif (
                event.get("method") == "Runtime.consoleAPICalled"
                and event["params"].get("type") == "error"
            ):
                args = event["params"].get("args", [])
                page.console_errors.append(" ".join(str(a.get("value", "")) for a in args))
        return page

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call("Browser.close", timeout=5)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._commands)
        os.close(self._replies)
        self.profile.cleanup()


@pytest.fixture(scope="module")
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built with ``mkdocs build --strict`` into a temporary folder (the build
    tests/conftest.py started in the background when the session collected this module,
    else one started here)."""
    if importlib.util.find_spec("mkdocs") is None:
        _skip_or_fail("mkdocs is not installed: `make docs` installs the docs dependency group")
    build = request.config.stash.get(docs_site.BUILD_KEY, None)
    if build is None:
        build = docs_site.SiteBuild(tmp_path_factory.mktemp("docs"))
    code, log = build.result()
    assert code == 0, f"mkdocs build --strict failed:\n{log[-4000:]}"
    assert "WARNING" not in log, log
    return build.out


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    """The built site served on 127.0.0.1, as a browser would get it."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def page_paths(site: Path) -> list[str]:
    """Every HTML page of the site, as a URL path relative to the site's root."""
    paths = []
    for file in sorted(site.rglob("*.html")):
        rel = file.relative_to(site).as_posix()
        paths.append(rel[: -len("index.html")] if rel.endswith("index.html") else rel)
    return paths


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium for the module's pages."""
    executable = find_browser()
    if executable is None:
        _skip_or_fail(
            "no headless Chromium (`make docs-browser` installs Debian's chromium package)"
        )
    assert executable is not None
    driver = Browser(executable)
    try:
        yield driver
    finally:
        driver.close()


@pytest.fixture(scope="module")
def pages(site: Path, server: str, browser: Browser) -> dict[str, Page]:
    """Every page as the browser rendered it, by URL path."""
    return {path: browser.open(server + path) for path in page_paths(site)}


def test_the_browser_sees_the_dom_and_script_errors(browser: Browser) -> None:
    page = browser.open(
        "data:text/html,<title>T</title><h1 id=a>Hi</h1>"
        "<script>document.documentElement.className = 'ran'; throw new Error('boom')</script>"
    )
    assert (page.title, page.h1, page.html_classes) == ("T", ["Hi"], "ran")
    assert "a" in page.ids
    assert any("boom" in error for error in page.console_errors), page.console_errors


def test_the_site_has_the_pages_of_its_users(site: Path) -> None:
    paths = set(page_paths(site))
    for expected in (
        "",
        "getting-started/install/",
        "getting-started/quickstart/",
        "guides/serverless/",
        "guides/data-teams/",
        "guides/agents/",
        "backends/",
        "cli/",
        "mcp/",
        "reference/",
    ):
        assert expected in paths, sorted(paths)


def test_every_page_renders(pages: dict[str, Page]) -> None:
    assert len(pages) >= 15, sorted(pages)
    for path, page in pages.items():
        assert page.title, f"{path}: no <title>"
        assert page.h1 and page.h1[0], f"{path}: no <h1>"
        # Material's script ran (it marks <html>); a page whose scripts failed lacks this
        assert "js-focus-visible" in page.html_classes.split(), f"{path}: scripts did not run"
        assert not page.console_errors, f"{path}: script errors: {page.console_errors}"
        leftover = LEFTOVERS.search(page.text)
        assert leftover is None, f"{path}: unrendered markup {leftover.group(0)!r}"


def _target(site: Path, page_url: str, href: str) -> tuple[str, Path, str] | None:
    """``(url path, file, fragment)`` of an internal link, or None for an external one."""
    full = urljoin(page_url, href)
    parts = urlsplit(full)
    if parts.scheme not in ("http", "https") or parts.netloc != urlsplit(page_url).netloc:
        return None
    path = unquote(parts.path).lstrip("/")
    file = site / path
    if path == "" or path.endswith("/"):
        file = file / "index.html"
    return path, file, unquote(parts.fragment)


def broken_links(site: Path, pages: dict[str, Page]) -> tuple[int, list[str]]:
    """How many internal links and resources the pages have, and which do not resolve
    (no such file, or no element with the fragment's id on the target page)."""
    broken = []
    checked = 0
    for path, page in pages.items():
        for href in [*page.links, *page.resources]:
            target = _target(site, page.url, href)
            if target is None:
                continue
            checked += 1
            target_path, file, fragment = target
            if not file.is_file():
                broken.append(f"{path or '/'}: {href} -> no file {target_path}")
                continue
            target_page = pages.get(target_path)
            if fragment and (target_page is None or fragment not in target_page.ids):
                broken.append(f"{path or '/'}: {href} -> no anchor #{fragment}")
    return checked, broken


def test_the_link_check_finds_missing_files_and_anchors(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "index.html").write_text("<html></html>")
    base = "http://127.0.0.1:1/"
    page = Page(
        base + "a/",
        ids={"here"},
        links=["#here", "../a/#here", "#gone", "../b/", "https://example.com/x#y"],
        resources=["../a/index.html", "missing.js"],
    )
    checked, broken = broken_links(tmp_path, {"a/": page})
    assert checked == 6
    assert broken == [
        "a/: #gone -> no anchor #gone",
        "a/: ../b/ -> no file b/",
        "a/: missing.js -> no file a/missing.js",
    ]


def test_every_internal_link_and_anchor_resolves(site: Path, pages: dict[str, Page]) -> None:
    checked, broken = broken_links(site, pages)
    assert checked > 500, checked
    assert not broken, "\n".join(broken)


def test_the_cli_page_shows_the_real_help_of_every_command(pages: dict[str, Page]) -> None:
    listing = subprocess.run(
        [sys.executable, "-c", "import sys; from fsmemory.cli import main; sys.exit(main())", "-h"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "COLUMNS": "88"},
    ).stdout
    commands = re.findall(r"^    ([a-z][a-z-]*) ", listing, re.M)
    assert "remember" in commands and "mcp" in commands, listing
    text = pages["cli/"].text
    for command in commands:
        assert f"usage: fsmemory {command} " in text, f"the CLI page lacks {command} --help"


def public_modules() -> list[str]:
    """fsmemory's public subpackages and top-level modules (names without a leading _)."""
    return sorted(
        f"fsmemory.{info.name}"
        for info in pkgutil.iter_modules(fsmemory.__path__)
        if not info.name.startswith("_")
    )


def test_the_reference_covers_every_public_module() -> None:
    covered = {m.split(".")[0] + "." + m.split(".")[1] for m in REFERENCED_MODULES if "." in m}
    missing = [m for m in public_modules() if m not in covered and m not in UNREFERENCED]
    assert not missing, f"public modules neither in the API reference nor excused: {missing}"


def test_the_reference_documents_every_public_name(site: Path) -> None:
    anchors: set[str] = set()
    for file in (site / "reference").rglob("*.html"):
        anchors.update(
            re.findall(r'\bid="(fsmemory(?:\.[A-Za-z_][A-Za-z0-9_]*)+)"', file.read_text())
        )
    missing = []
    for name in REFERENCED_MODULES:
        module = importlib.import_module(name)
        for member in module.__all__:
            if member.startswith("__"):
                continue  # __version__
            # a name re-exported at the top level is documented there once
            if f"{name}.{member}" in anchors or (
                f"fsmemory.{member}" in anchors
                and getattr(fsmemory, member, None) is getattr(module, member)
            ):
                continue
            if name == "fsmemory" and f"fsmemory.errors.{member}" in anchors:
                continue  # the errors, documented on their own page
            missing.append(f"{name}.{member}")
    assert not missing, f"public names missing from the API reference: {missing}"


def test_the_install_page_lists_every_extra() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    page = (ROOT / "docs" / "getting-started" / "install.md").read_text(encoding="utf-8")
    missing = [name for name in extras if f"| `{name}` |" not in page]
    assert not missing, f"extras missing from the installation page's table: {missing}"
