"""The class report in a real browser: Debian's headless chromium driven by playwright (never `playwright
install`: .ci/run installs chromium with apt-get). The page opens from a file, every chart is drawn, the counts
on the page are those computed from the results, a student's link opens that student's feedback, and at
1280 px no element is wider than the window, in English and in Spanish (a wide table scrolls in its own box).

Without playwright (the README's `pip install -e '.[nbgrader]'` leaves it out: it is the dev extra) or without
chromium, the tests skip, except under CI, where both are installed and their absence is a failure."""

import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from autograder import i18n
from autograder.report import REPORT_HTML, stats, synthetic, write

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
WIDTH, HEIGHT = 1280, 900
SCREENS = 10  # a class of 25 reads in at most about ten screens at 1280 px (issue 31)
# Every element's right edge, those inside a scroll box aside (the box itself is measured), past the window
TOO_WIDE = """() => [...document.body.querySelectorAll('*')]
  .filter(el => !el.parentElement.closest('.scroll'))
  .filter(el => el.getBoundingClientRect().right > innerWidth + 1)
  .map(el => el.tagName + '.' + el.className + (el.id ? '#' + el.id : ''))"""


def _browser():
    """playwright and Debian's chromium, or a clean skip (a failure under CI)."""
    missing = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = "playwright is not installed (the dev extra: pip install -e '.[dev]')"
    if missing is None and not Path(CHROMIUM).exists():
        missing = "Debian's chromium is not installed (.ci/run installs it)"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    return sync_playwright


@pytest.fixture(scope="module")
def browser():
    """One chromium for the module (playwright's sync API runs one instance per thread)."""
    sync_playwright = _browser()
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def page(browser, tmp_path_factory):
    base = tmp_path_factory.mktemp("browser")
    plan = synthetic.make_class(
        base / "out", 12, submissions=base / "subs", copies=1, hostile_names=True
    )
    with i18n.chosen("en"):
        write(base / "out", base / "subs")
    tab = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    tab.goto((base / "out" / REPORT_HTML).as_uri())
    yield tab, plan, base
    tab.close()


def test_the_report_renders_its_charts_and_counts_in_a_browser(page):
    tab, plan, base = page
    charts = tab.locator("svg.chart")
    assert charts.count() >= 15  # 13 components, integration, total, grading time
    for i in range(charts.count()):
        box = charts.nth(i).bounding_box()
        assert box and box["width"] > 100 and box["height"] > 50
        assert charts.nth(i).locator("rect.bar").count() > 0
    expected = synthetic.expected_mistakes(plan)
    shown = {}
    rows = tab.locator("tr.mistake")
    for i in range(rows.count()):
        row = rows.nth(i)
        table = row.locator("xpath=ancestor::table[1]").get_attribute("data-row")
        shown[(table, row.get_attribute("data-hint"))] = int(row.locator("td.count").inner_text())
    assert shown == {k: len(v) for k, v in expected.items()}
    totals = [sum(o.score for o in r.outcomes) for r in plan.results.values()]
    page_totals = [float(t) for t in tab.locator("#student-table td.total").all_inner_texts()]
    assert page_totals == pytest.approx(sorted(totals))  # lowest first
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


@pytest.fixture(scope="module")
def class_of_25(browser, tmp_path_factory):
    """The planted class of tests/test_report.py (Moodle's names, bugs in one component each, correct students,
    missing files), graded and reported in each language, open at 1280 px."""
    base = tmp_path_factory.mktemp("class25")
    pages = {}
    for lang in ("en", "es"):
        with i18n.chosen(lang):
            synthetic.make_class(
                base / lang, 25, seed=3, names=synthetic.moodle_names(25), correct=3, missing=2,
                bug_rate=0.5,
            )  # fmt: skip
            write(base / lang, lang=lang)
    for lang in ("en", "es"):
        pages[lang] = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        pages[lang].goto((base / lang / REPORT_HTML).as_uri())
    yield pages
    for tab in pages.values():
        tab.close()


@pytest.mark.parametrize("lang", ["en", "es"])
def test_nothing_is_wider_than_the_window_at_1280_px(class_of_25, lang):
    tab = class_of_25[lang]
    assert tab.evaluate(TOO_WIDE) == []
    assert tab.evaluate("document.documentElement.scrollWidth") <= WIDTH
    # the students' table is the widest: its box scrolls, and its names and totals are in the window
    first = tab.locator("#student-table tr.student-row").first
    for cell in ("td.who", "td.total"):
        box = first.locator(cell).bounding_box()
        assert box and box["x"] + box["width"] <= WIDTH
    # numbers do not wrap: a total's cell is one line high
    assert first.locator("td.total").evaluate("td => td.getClientRects().length") == 1
    height = tab.evaluate("document.documentElement.scrollHeight")
    assert height <= SCREENS * HEIGHT, f"{height / HEIGHT:.1f} screens"


@pytest.mark.parametrize("lang", ["en", "es"])
def test_flagged_items_are_open_and_the_rest_folded(class_of_25, lang):
    tab = class_of_25[lang]
    folds = tab.locator("details.items")
    assert folds.count() >= 13
    for i in range(folds.count()):
        fold = folds.nth(i)
        flags = fold.locator(
            "tr.item[data-flag='low_discrimination'], tr.item[data-flag='all_fail']"
        )
        assert fold.evaluate("d => d.open") == (flags.count() > 0)
    assert stats.LOW_DISCRIMINATION == 0.1  # the page's sentence says 0.1
