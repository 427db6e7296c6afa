"""The batch page: self-contained, escaped, and working in a real headless browser (Debian's chromium)."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pytest
from made_up_cohort import HOSTILE, cohort

from harness.report.html import render_html
from harness.report.summary import summarise

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
    # each candidate's details are folded: a row of the table's height until opened (link or click)
    assert all(page.locator(f"[id='c-{sid}']").bounding_box()["height"] < 40 for sid in ("ada", "bert", "=evil"))
    page.click("#candidates a[href='#c-bert']")
    assert "<img src=x" in page.inner_text("#c-bert")  # opened by its link, and shown as text
    assert page.locator("#c-bert").bounding_box()["height"] > 200

    # an error row says why in the table; every score has one decimal, as in the text report
    assert page.inner_text("#candidates tr[data-status=error] td.why").startswith("importing raised <img src=x")
    assert [rows.nth(i).locator("td").nth(2).inner_text() for i in range(5)] == [
        "10.0 / 10.0", "4.0 / 10.0", "10.0 / 10.0", "0.0 / 10.0", "0.0 / 10.0"]
    assert [rows.nth(i).locator("td").nth(7).inner_text() for i in range(3)] == ["", "overwrite, 1 unexplained", ""]

    def bins() -> list[int]:
        bars = page.locator("#histogram rect.bar")
        return [int(bars.nth(i).get_attribute("data-count")) for i in range(10)]

    # graded rows only (dmitri's violation and =evil's error are no 0% scores): bert 40%, ada and cleo 100%
    assert bins() == [0, 0, 0, 0, 1, 0, 0, 0, 0, 2] and page.inner_text("#histogram-graded") == "3"
    assert page.inner_html("#histogram").count("interview bar 80%") == 1  # the bar: 8 of the core's 10
    # candidates x concepts: bert earned none of accumulation and all of order
    heat = {row.split("\t")[0]: row.split("\t")[1:] for row in page.inner_text("#heatmap tbody").splitlines()}
    assert heat == {"ada": ["100", "100"], "bert": ["0", "100"], "cleo": ["100", "100"]}
    assert page.locator("#heatmap tbody tr").nth(1).locator("td").nth(1).get_attribute("class") == "h0"
    assert page.inner_text("#common-causes tbody").split("\t")[:3] == ["overwrite", "overwrite instead of accumulate",
                                                                       "1"]

    # scores: ada 10, bert 4, cleo 10, dmitri 0, =evil 0; ties are broken by id
    page.click("#candidates th[data-key=score]")
    assert visible_ids() == ["=evil", "dmitri", "bert", "ada", "cleo"]
    page.click("#candidates th[data-key=score]")
    assert visible_ids() == ["ada", "cleo", "bert", "=evil", "dmitri"]
    page.click("#candidates th[data-key=id]")
    assert visible_ids() == ["=evil", "ada", "bert", "cleo", "dmitri"]

    page.fill("#filter", "BERT")
    assert visible_ids() == ["bert"] and page.inner_text("#shown") == "1 of 5 shown"
    assert bins() == [0, 0, 0, 0, 1, 0, 0, 0, 0, 0] and page.inner_text("#histogram-graded") == "1"
    page.fill("#filter", "overwrite")  # a root cause
    assert visible_ids() == ["bert"]
    page.fill("#filter", "")
    for choice, expected in [("error", ["=evil"]), ("integrity_violation", ["dmitri"]),
                             ("needs-review", ["cleo"]), ("interview-passed", ["ada"]), ("", None)]:
        page.select_option("#status-filter", choice)
        assert visible_ids() == (expected or ["=evil", "ada", "bert", "cleo", "dmitri"]), choice
        if choice == "error":
            assert bins() == [0] * 10
    assert problems == [] and dialogs == []
    page.close()
