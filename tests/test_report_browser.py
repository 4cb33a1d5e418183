"""The class report in a real browser: Debian's headless chromium driven by playwright (never `playwright
install`: .ci/run installs chromium with apt-get). The page opens from a file, every chart is drawn, the counts
on the page are those computed from the results, a student's link opens that student's feedback, and a
screenshot is kept (the test's tmp folder)."""

import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from autograder import i18n
from autograder.report import REPORT_HTML, hints, synthetic, write

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    if not Path(CHROMIUM).exists() and not os.environ.get("CI"):
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    base = tmp_path_factory.mktemp("browser")
    plan = synthetic.make_class(
        base / "out", 12, submissions=base / "subs", copies=1, hostile_names=True
    )
    with i18n.chosen("en"):
        write(base / "out", base / "subs")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.goto((base / "out" / REPORT_HTML).as_uri())
        yield tab, plan, base
        browser.close()


def test_the_report_renders_its_charts_and_counts_in_a_browser(page):
    tab, plan, base = page
    charts = tab.locator("svg.chart")
    assert charts.count() >= 15  # 13 components, integration, total, grading time
    for i in range(charts.count()):
        box = charts.nth(i).bounding_box()
        assert box and box["width"] > 100 and box["height"] > 50
        assert charts.nth(i).locator("rect.bar").count() > 0
    expected = {}
    for name, r in plan.results.items():
        for o in r.outcomes:
            if not o.passed and o.hint and o.status != "not_implemented":
                row = "integration" if o.property.integration else o.property.component
                expected.setdefault((row, hints.hint_id(o.hint)), set()).add(name)
    shown = {}
    rows = tab.locator("tr.mistake")
    for i in range(rows.count()):
        row = rows.nth(i)
        table = row.locator("xpath=ancestor::table[1]").get_attribute("data-row")
        shown[(table, row.get_attribute("data-hint"))] = int(row.locator("td.count").inner_text())
    assert shown == {k: len(v) for k, v in expected.items()}
    totals = sorted(sum(o.score for o in r.outcomes) for r in plan.results.values())
    page_totals = sorted(float(t) for t in tab.locator("#student-table td.total").all_inner_texts())
    assert page_totals == pytest.approx(totals)
    assert tab.locator("table.pairs tr.pair").count() >= 1  # the planted copy
    tab.screenshot(path=str(base / "report.png"), full_page=False)
    assert (base / "report.png").stat().st_size > 10_000


def test_a_students_link_opens_their_feedback(page):
    tab, plan, base = page
    # every student link (hostile names included) points at an existing feedback page
    hrefs = tab.eval_on_selector_all("a.student", "links => links.map(a => a.href)")
    targets = {Path(unquote(urlparse(h).path)) for h in hrefs}
    assert targets == {base / "out" / name / "feedback.html" for name in plan.results}
    assert all(t.is_file() for t in targets)
    link = tab.locator("#student-table a.student").first
    name = link.inner_text()
    assert name in plan.results
    link.click()
    tab.wait_for_load_state()
    assert Path(tab.url.removeprefix("file://")).name == "feedback.html"
    assert tab.locator("body").inner_text().strip()
    tab.go_back()
