"""The batch page: self-contained, escaped, and working in a real headless browser (Debian's chromium)."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pytest
from made_up_cohort import HOSTILE, cohort

from harness.report.html import render_html
from harness.report.tables import summarise

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def page_file(tmp_path_factory) -> Path:
    reports = cohort()
    summary = summarise(reports, settings={"level": "core", "seed": 0, "grader_version": "0.1.0"},
                        similarity=[{"a": "ada", "b": "cleo", "score": 1.0, "shared": 9}])
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render_html(summary, reports))
    return path


def test_candidate_text_is_escaped_everywhere(page_file):
    text = page_file.read_text()
    assert HOSTILE not in text
    assert "<img" not in text and text.count("<script>") == 1  # the page's own script only
    escaped = ("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;"
               "&amp;amp;")
    # message, snippet, output, review line, violation, root cause (explanation and snippet)
    assert text.count(escaped) >= 7


def test_the_page_needs_nothing_from_outside(page_file):
    text = page_file.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text)
    assert "@import" not in text and "url(" not in text
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', text)
    assert csp and html.unescape(csp.group(1)).startswith("default-src 'none'; script-src 'sha256-")


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run installs it)")
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed "
                                         "(pip install -e '.[test]')")
    with playwright_api.sync_playwright() as p:
        # root has no user namespace sandbox for chromium here; the machine has no network
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-default-apps", "--disable-sync", "--no-first-run", "--disable-extensions"])
        yield browser
        browser.close()


def test_the_page_works_in_a_browser(browser, page_file):
    page = browser.new_page()
    problems, dialogs = [], []
    page.on("console", lambda msg: problems.append(msg.text) if msg.type in ("error", "warning") else None)
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(page_file.as_uri())
    rows = page.locator("#candidates tbody tr")

    def visible_ids() -> list[str]:
        return [rows.nth(i).locator("td").first.inner_text() for i in range(rows.count()) if rows.nth(i).is_visible()]

    assert visible_ids() == ["ada", "bert", "cleo", "dmitri", "=evil"]
    assert page.inner_text("#shown") == "5 of 5 shown"
    assert page.locator("#histogram rect.bar").count() == 10
    assert "<img src=x" in page.inner_text("#c-bert")  # shown as text

    # scores: ada 10, bert 4, cleo 10, dmitri 0, =evil 0; ties are broken by id
    page.click("#candidates th[data-key=score]")
    assert visible_ids() == ["=evil", "dmitri", "bert", "ada", "cleo"]
    page.click("#candidates th[data-key=score]")
    assert visible_ids() == ["ada", "cleo", "bert", "=evil", "dmitri"]
    page.click("#candidates th[data-key=id]")
    assert visible_ids() == ["=evil", "ada", "bert", "cleo", "dmitri"]

    page.fill("#filter", "BERT")
    assert visible_ids() == ["bert"] and page.inner_text("#shown") == "1 of 5 shown"
    page.fill("#filter", "overwrite")  # a root cause
    assert visible_ids() == ["bert"]
    page.fill("#filter", "")
    for choice, expected in [("error", ["=evil"]), ("integrity_violation", ["dmitri"]),
                             ("needs-review", ["cleo"]), ("interview-passed", ["ada"]), ("", None)]:
        page.select_option("#status-filter", choice)
        assert visible_ids() == (expected or ["=evil", "ada", "bert", "cleo", "dmitri"]), choice
    assert problems == [] and dialogs == []
    page.close()
