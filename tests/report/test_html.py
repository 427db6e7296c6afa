"""The batch page: self-contained, escaped, and working in a real headless browser (Debian's chromium)."""

from __future__ import annotations

import html
import re
import shutil
import time
from pathlib import Path

import pytest
from made_up_cohort import HOSTILE, cohort

from harness.report.cohort import Cohort
from harness.report.decisions import Decision
from harness.report.html import render_html
from harness.report.model import CheckResult, Report, RootCause
from harness.report.summary import summarise

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


SOURCE = f"class Tensor:\n    # {HOSTILE}\n    def __add__(self, other):\n        return Tensor(self.data + other.data)\n"
"""The two sources of the similar pair: the second has one more line on top, so its shared region is one lower."""


@pytest.fixture(scope="module")
def page_file(tmp_path_factory) -> Path:
    reports = cohort()
    pair = {"a": "ada", "b": "cleo", "score": 1.0, "shared": 9, "regions": {"a": [[1, 4]], "b": [[2, 5]]}}
    summary = summarise(reports, settings={"level": "core", "seed": 0, "grader_version": "0.1.0"},
                        similarity=[pair])
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render_html(Cohort(summary, reports, {"ada": SOURCE, "cleo": "# mine\n" + SOURCE})))
    return path


def test_candidate_text_is_escaped_everywhere(page_file):
    text = page_file.read_text()
    assert HOSTILE not in text
    assert "<img" not in text and text.count("<script>") == 1  # the page's own script only
    escaped = ("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;"
               "&amp;amp;")
    # message, snippet, output, review line, violation, root cause (explanation and snippet), both sources of the pair
    assert text.count(escaped) >= 9


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
    assert page.locator("#candidates tr[data-status=error] .why").get_attribute("title").startswith(
        "importing raised <img src=x")
    assert [rows.nth(i).locator("td").nth(2).inner_text() for i in range(5)] == [
        "10.0 / 10.0", "4.0 / 10.0", "10.0 / 10.0", "0.0 / 10.0", "0.0 / 10.0"]
    # root causes by their short titles, the one to fix first first; the error's reason is not among them
    assert [rows.nth(i).locator("td").nth(8).inner_text() for i in range(5)] == [
        "", "overwrite instead of accumulate, order failures around x0 + x1", "", "", ""]

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
    # the similar pair side by side: folded until its link opens it, the shared lines marked alike on both sides
    assert page.locator("#pair-0").bounding_box()["height"] < 40
    page.click("#similarity a[href='#pair-0']")
    for _ in range(100):  # the page opens it on the hash change (wait_for_function would need eval: the CSP says no)
        if page.locator("#pair-0 details").evaluate("d => d.open"):
            break
        time.sleep(0.05)
    sides = page.locator("#pair-0 .sides > div")
    assert sides.count() == 2 and "<img src=x" in sides.nth(0).inner_text()
    marks = [sides.nth(i).locator("mark") for i in range(2)]
    assert [m.count() for m in marks] == [1, 1]
    assert marks[0].get_attribute("class") == marks[1].get_attribute("class") == "m0"
    assert marks[0].inner_text().splitlines()[0] == "1class Tensor:"  # the line number, then the line
    assert marks[1].get_attribute("title") == "shared region 1: lines 1-4 of ada"
    assert "# mine" not in marks[1].inner_text()  # cleo's own first line is not shared
    assert problems == [] and dialogs == []
    page.close()


def _big_cohort() -> Cohort:
    """Sixty candidates meant to stretch every table: long ids, every level, twenty concepts, sentences for root
    causes, long messages without a space, decisions with long comments, and similar pairs with long lines."""
    concepts = ["accumulation", "order", "shapes", "requires_grad", "broadcasting", "routing", "numerics", "memory",
                "matmul", "linearity", "upstream", "ops", "side_effects", "saved_tensors", "conventions", "embedding",
                "pooling", "batchnorm", "mean_vs_sum", "properties"]
    levels = ("core", "followups", "extensions")
    reports, decisions, sources = {}, {}, {}
    for n in range(60):
        sid = f"candidate_with_a_rather_long_identifier_from_the_zip_{n:02d}" + "x" * (n % 7) * 10
        checks = tuple(CheckResult(f"{levels[i % 3]}.check_{i}", levels[i % 3], concept, f"title {i}",
                                   ("passed", "failed", "not_attempted")[(i + n) % 3], "m" * 300,
                                   1.0 if (i + n) % 3 == 0 else 0.0, 1.0)
                       for i, concept in enumerate(concepts))
        causes = tuple(RootCause(None if k else "overwrite", "Every leaf's gradient is zero: " + "word " * 40,
                                 checks=(checks[1].id,)) for k in range(n % 4))
        status = "error" if n % 9 == 0 else "graded"
        score = sum(c.points for c in checks)
        reports[sid] = Report(
            file=f"subs/{sid}.py", status=status, score=score, max_score=20.0,
            levels={level: {"score": score / 3, "max_score": 20 / 3} for level in levels}, checks=checks,
            message="Traceback:" + "y" * 500 if status == "error" else "", root_causes=causes,
            source_sha256=f"{n:064x}", timings={"wall": 123.4})
        if n % 5 == 0:
            decisions[sid] = Decision(decided_at="2025-05-01T10:00:00+00:00", by="interviewer " * 5,
                                      source_sha256=f"{n:064x}", automatic_score=score, max_score=20.0,
                                      score=15.0, because="z" * 400, comment="w" * 600)
        sources[sid] = "def f(x):\n    return " + " + ".join(["x"] * 200) + "\n" + "q" * 3000 + "\n"
    ids = list(reports)
    pairs = [{"a": ids[i], "b": ids[i + 1], "score": 0.9, "shared": 30, "regions": {"a": [[1, 3]], "b": [[1, 3]]}}
             for i in range(0, 20, 2)]
    summary = summarise(reports, settings={"level": "all"}, similarity=pairs, decisions=decisions)
    return Cohort(summary, reports, sources)


@pytest.mark.parametrize("size", [3, 60])
def test_the_page_fits_a_window_1400_pixels_wide(browser, tmp_path, size):
    big = _big_cohort()
    keep = [row["id"] for row in big.summary["submissions"][:size]]
    summary = {**big.summary, "submissions": big.summary["submissions"][:size],
               "similarity": [p for p in big.summary["similarity"] if p["a"] in keep and p["b"] in keep]}
    path = tmp_path / "report.html"
    path.write_text(render_html(Cohort(summary, {k: big.reports[k] for k in keep}, big.sources)))
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems = []
    page.on("console", lambda msg: problems.append(msg.text) if msg.type in ("error", "warning") else None)
    page.goto(path.as_uri())
    for details in page.locator("details").all():  # every candidate and pair opened: the widest the page gets
        details.evaluate("d => d.open = true")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    # nothing scrolls sideways inside the page either: long cells wrap, or are cut with the whole text on hover
    scrolled = page.evaluate("""Array.from(document.querySelectorAll('body *')).filter(el => {
        const style = getComputedStyle(el);
        return ['auto', 'scroll'].includes(style.overflowX) && el.scrollWidth > el.clientWidth;
    }).map(el => el.tagName + '#' + el.id)""")
    assert scrolled == []
    outside = page.evaluate("""Array.from(document.querySelectorAll('body *'))
        .filter(el => el.getBoundingClientRect().right > 1400).map(el => el.tagName)""")
    assert outside == []
    first = page.locator("#candidates tbody tr").first
    cut = first.locator("a.clip")
    assert cut.get_attribute("title") == keep[0] and cut.evaluate("a => a.scrollWidth > a.clientWidth")
    if size == 60:
        decision = page.locator("#candidates tbody tr").first.locator("td").nth(4).locator("span")
        assert decision.inner_text() == "score set, comment" and "w" * 600 in decision.get_attribute("title")
        assert page.locator("#concepts tbody tr").count() == 20
    assert problems == []
    page.close()


def test_the_page_shows_decisions_and_comments(tmp_path):
    reports = cohort()
    decision = Decision(decided_at="2025-05-01T10:00:00+00:00", by="ann", source_sha256=reports["bert"].source_sha256,
                        automatic_score=4.0, max_score=10.0, score=7.5, because="explained the fix aloud",
                        comment=f"knew accumulation once asked {HOSTILE}")
    accepted = Decision(decided_at="2025-05-01T10:00:00+00:00", by="ann", accept_review=True,
                        source_sha256=reports["cleo"].source_sha256, automatic_score=10.0, max_score=10.0)
    summary = summarise(reports, settings={}, decisions={"bert": decision, "cleo": accepted})
    text = render_html(Cohort(summary, reports))
    assert 'data-review="yes"' not in text  # cleo's review entries were read: she no longer waits for review
    row = text[text.index('<td data-value="bert">'):]
    row = row[:row.index("</tr>")]
    assert "7.5 / 10.0" in row and "auto 4.0" in row and "score set, comment" in row
    details = text[text.index('<section class="candidate" id="c-bert">'):]
    assert "<h4>Decision</h4>" in details and "because explained the fix aloud" in details
    assert "knew accumulation once asked &lt;img" in details and HOSTILE not in text
