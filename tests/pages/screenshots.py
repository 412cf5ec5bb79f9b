"""``make screenshots``: the status page, a case view, a gate report and a regressed case's
baseline beside its candidate, as docs/images/*.png.

Everything is real: the bundled reference service, ``evaluator serve`` with two jobs against
it, ``evaluator gate --html`` on a baseline run and a run with the reranker switched to noise,
``evaluator demo`` turned red by that failure mode (its page and its trend lines), and
Debian's Chromium taking the pictures. Run from the repository root.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import httpx
from playwright.sync_api import Page, sync_playwright

from tests.pages.image_sources import RECORD, expected_record
from tests.pages.stack import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    EVALUATOR,
    REPO,
    clean_env,
    serving,
    wait_for,
)
from tests.support.ports import free_port

OUT = REPO / "docs" / "images"
GOLDEN = REPO / "evals" / "rag_cases.jsonl"
#: a failing case whose expected fact sits, highlighted, in its relevant evidence
CASE = "zh-refund-deadline"
#: failure modes of the daemon's successive runs, so the trend lines have a story to tell
RUN_MODES: tuple[tuple[str, ...], ...] = (
    (),
    (),
    ("rerank_degraded",),
    ("rerank_degraded",),
    (),
    (),
)


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EVALUATOR, *args], cwd=cwd, env=clean_env(), capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip


def _runs_with_modes(ref: str, url: str) -> None:
    """Let the rag_cases job run once per entry of RUN_MODES, switching modes between runs."""
    seen: list[str] = []
    deadline = time.monotonic() + 120
    with httpx.Client(base_url=url, timeout=5) as http:
        while len(seen) < len(RUN_MODES):
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(seen)} runs within 120 s")
            latest = http.get(
                "/reports/latest", params={"target": "reference", "dataset": "rag_cases"}
            )
            run_id = latest.json().get("run_id") if latest.status_code == 200 else None
            if run_id is not None and run_id not in seen:
                seen.append(run_id)
                modes = RUN_MODES[min(len(seen), len(RUN_MODES) - 1)]
                httpx.put(f"{ref}/admin/failure-modes", json={"modes": list(modes)}, timeout=5)
            time.sleep(0.2)


def _runs_done(url: str) -> int:
    """Runs the daemon at ``url`` finished, from its /metrics."""
    text = httpx.get(f"{url}/metrics", timeout=5).text
    return round(
        sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("rag_eval_runs_total{")
        )
    )


def _until_runs(url: str, count: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while _runs_done(url) < count:
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(log.read_text("utf-8", errors="replace")[-3000:])
        time.sleep(0.3)


#: healthy runs of the demo before its reranker degrades, and degraded runs after: enough
#: for the history's newly failing class and drift test (three runs) to show beside the gate
DEMO_HEALTHY_RUNS = 3
DEMO_DEGRADED_RUNS = 3


def _demo_pictures(work: Path, page: Page) -> None:
    """``evaluator demo`` red: its reranker degraded after a few healthy runs. The top of its
    status page, and the job's trend lines (the baseline, the gate's line, the runs that fell
    through it, the run where the change began)."""
    rag, port = free_port(), free_port()
    url = f"http://127.0.0.1:{port}"
    demo = [EVALUATOR, "demo", "--dataset", str(GOLDEN), "--rag-port", str(rag),
            "--listen", f"127.0.0.1:{port}", "--no-prometheus", "--interval", "3",
            "--reports-dir", str(work / "demo-reports")]  # fmt: skip
    log = work / "demo.log"
    with serving(demo, cwd=work, env=clean_env(), log=log) as process:
        # the demo runs two jobs (rag_cases, conversations): /reports/latest names one
        wait_for(url, ["/reports/latest?target=reference&dataset=rag_cases"], process, log)
        _until_runs(url, DEMO_HEALTHY_RUNS, process, log)
        modes = {"modes": ["rerank_degraded"]}
        httpx.put(f"http://127.0.0.1:{rag}/admin/failure-modes", json=modes, timeout=5)
        _until_runs(url, _runs_done(url) + DEMO_DEGRADED_RUNS, process, log)
        page.goto(url + "/")
        page.screenshot(path=str(OUT / "demo-red.png"))
        print(OUT / "demo-red.png")
        head = page.locator("h3.trends-head").first.bounding_box()
        charts = page.locator("div.trends").first.bounding_box()
        if head is None or charts is None:
            raise RuntimeError("the demo's page has no trend lines")
        page.screenshot(
            path=str(OUT / "status-trends.png"),
            full_page=True,
            clip={
                "x": charts["x"] - 8,
                "y": head["y"] - 6,
                "width": charts["width"] + 16,
                "height": charts["y"] + charts["height"] - head["y"] + 12,
            },
        )
        print(OUT / "status-trends.png")


def main() -> int:
    """Take every screenshot of the module docstring into docs/images (0: all taken)."""
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="evaluator-screenshots-"))
    ref_port, port = free_port(), free_port()
    ref = f"http://127.0.0.1:{ref_port}"
    config = work / "evaluator.toml"
    config.write_text(
        f'listen = "127.0.0.1:{port}"\nreports_dir = "{work / "reports"}"\nlog_format = "json"\n'
        f'[[targets]]\nname = "reference"\nurl = "{ref}/rag"\n'
        f'[[jobs]]\ntarget = "reference"\ndataset = "{GOLDEN}"\ninterval_seconds = 3\n'
        f'baseline = "{work / "baseline.json"}"\n'
        f'[[jobs]]\ntarget = "reference"\ndataset = "{REPO / "evals" / "example.jsonl"}"\n'
        "interval_seconds = 3600\n",
        "utf-8",
    )
    reference = [sys.executable, "-m", "evaluator.reference", "--port", str(ref_port)]
    with serving(reference, cwd=work, env=clean_env(), log=work / "reference.log") as service:
        wait_for(ref, ["/healthz"], service, work / "reference.log")
        # the gate report: a baseline run, then one with the reranker switched to noise
        for name, modes in (("baseline.json", []), ("candidate.json", ["rerank_degraded"])):
            httpx.put(f"{ref}/admin/failure-modes", json={"modes": modes}, timeout=5)
            done = _run("run", "--dataset", str(GOLDEN), "--target-url", f"{ref}/rag",
                        "--output", name, cwd=work)  # fmt: skip
            if done.returncode != 0:
                raise RuntimeError(done.stderr)
        httpx.put(f"{ref}/admin/failure-modes", json={"modes": []}, timeout=5)
        gate = _run("gate", "--baseline", "baseline.json", "--candidate", "candidate.json",
                    "--html", "gate.html", "--worst", "5", cwd=work)  # fmt: skip
        if gate.returncode != 2:
            raise RuntimeError(f"expected a failing gate (exit 2): {gate.stdout}{gate.stderr}")
        url = f"http://127.0.0.1:{port}"
        serve = [EVALUATOR, "serve", "--config", str(config)]
        with serving(serve, cwd=work, env=clean_env(), log=work / "serve.log") as daemon:
            wait_for(
                url,
                [f"/reports/latest?target=reference&dataset={d}" for d in ("rag_cases", "example")],
                daemon,
                work / "serve.log",
            )
            _runs_with_modes(ref, url)
            case = "/case?" + urlencode({"target": "reference", "dataset": "rag_cases", "id": CASE})
            shots = [
                (url + "/", "status-page.png"),
                (url + case, "case-view.png"),
                ((work / "gate.html").as_uri(), "gate-report.png"),
            ]
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True
                )
                page = browser.new_page(viewport={"width": 1200, "height": 1000})
                for source, name in shots:
                    page.goto(source)
                    page.screenshot(path=str(OUT / name))
                    print(f"{OUT / name}")
                # the first regressed case's baseline beside its candidate, on its own
                page.goto((work / "gate.html").as_uri())
                page.locator(".baseline-diff").first.screenshot(path=str(OUT / "gate-baseline.png"))
                print(f"{OUT / 'gate-baseline.png'}")
                _demo_pictures(work, page)
                browser.close()
    # what the pictures were made from, checked by tests/pages/test_screenshots_current.py
    RECORD.write_text(expected_record(), "utf-8")
    print(RECORD)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
