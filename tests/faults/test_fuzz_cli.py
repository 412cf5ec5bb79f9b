"""Generated hostile files, values and collector replies against the real CLIs, one
subprocess per attack (:mod:`tests.faults.surfaces`, deliveries other than ``target``):

- ``golden``: the golden set given to ``evaluator validate`` and to ``evaluator run``;
- ``report``: a candidate report (a real one, one field replaced) given to ``evaluator gate``;
- ``config``: a header value through ``${ENV}``, ``EVALUATOR_K``, a TOML number, given to
  ``evaluator check``;
- ``collector``: the reply of an OTLP collector to ``evaluator run``'s span export;
- ``openslo``, ``slo_config``: an OpenSLO file and a ``[[slos]]`` table given to
  ``evaluator check``;
- ``judge``: what an LLM judge answers every call of ``evaluator judge REPORT``;
- ``labels``: a human labels file given to ``evaluator calibrate`` and ``evaluator review``;
- ``calibration``: the stored calibration ``evaluator gate`` reads for a hard judged rule.

Per attack: a documented exit code (0 or 1; 2 only from the gate), no ``internal error`` or
traceback, no secret form, no control character in what reaches the terminal (at most one
``verdict:`` line from the gate), the process's peak RSS under the bound and its end within
:data:`HANG` seconds; ``evaluator run`` still writes its report whatever the collector does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults import figures
from tests.faults.blocks import SECRET
from tests.faults.invariants import (
    RSS_BOUND,
    MiB,
    all_of,
    control_characters,
    crashes,
    leaks,
)
from tests.faults.surfaces import Attack, Delivery, attacks_for, known_failure
from tests.support.judges import LoopbackJudge
from tests.support.loopback import LoopbackServer, Reply
from tests.support.prometheus import EVALUATOR
from tests.support.rawhttp import ScriptedRawServer

pytestmark = [pytest.mark.e2e, pytest.mark.fuzz]

#: seconds a CLI may take before it counts as hung (a bounded export takes 2 s)
HANG = 40.0
GOLDEN = (
    '{"id": "c0", "question": "q0", "relevant_ids": ["d0"], "expected_facts": ["fact0"]}\n'
    '{"id": "c1", "question": "q1", "relevant_ids": ["d0"]}\n'
)
GOOD = {"answer": "it is fact0", "retrieved": [{"id": "d0", "text": "fact0"}], "citations": [1]}
FIGURES: dict[str, dict[str, object]] = {}


@dataclass(frozen=True)
class CliResult:
    argv: Sequence[str]
    returncode: int | None
    stdout: str
    stderr: str
    max_rss: int
    seconds: float

    def problems(self, codes: frozenset[int] = frozenset({0, 1})) -> list[str]:
        """What is wrong with the command's result: an unexpected exit, too much memory, a
        crash, a leaked secret or a control character in its output."""
        name = self.argv[1]
        out = self.stdout + self.stderr
        return all_of(
            [] if self.returncode in codes else [f"{name} exit {self.returncode}"],
            [] if self.max_rss <= RSS_BOUND else [f"{name} peak RSS {self.max_rss / MiB:.0f}"],
            crashes(name, out),
            leaks(name, out),
            control_characters(name, out),
        )


def _peak_rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass  # ended (or not exec'd yet)
    return 0


def run_cli(
    args: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None, key: str = ""
) -> CliResult:
    """``evaluator ARGS`` to the end (killed after :data:`HANG`), with its peak RSS."""
    argv = [EVALUATOR, *args]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    full_env.update({"FUZZ_TOKEN": SECRET, "NO_COLOR": "1", **(env or {})})
    out, err = cwd / "stdout.txt", cwd / "stderr.txt"
    started = time.monotonic()
    with out.open("wb") as so, err.open("wb") as se:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=so, stderr=se, cwd=cwd, env=full_env
        )
        code: int | None = None
        rss = 0
        while True:
            # VmHWM of the exec'd process: the fork's copy of this interpreter (whose
            # ru_maxrss counts) is not the CLI's memory
            rss = max(rss, _peak_rss(proc.pid))
            pid, status, _usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                code = proc.returncode = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() - started > HANG:
                proc.kill()
                proc.wait(10)
                break
            time.sleep(0.01)
    seconds = time.monotonic() - started
    if key:
        FIGURES[key] = {"rss_mib": round(rss / MiB, 1), "seconds": round(seconds, 2),
                        "exit": code}  # fmt: skip
    return CliResult(
        argv,
        code,
        out.read_text("utf-8", errors="replace"),
        err.read_text("utf-8", errors="replace"),
        rss,
        seconds,
    )


@pytest.fixture(scope="module")
def good_target() -> Iterator[LoopbackServer]:
    """A well-behaved target for the command attacks, its figures recorded afterwards."""
    with LoopbackServer(lambda _request: Reply(body=GOOD)) as server:
        yield server
    figures.record("cli", dict(FIGURES))


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory, good_target: LoopbackServer) -> Path:
    """A real report of a run, the gate's baseline and the candidates' template."""
    folder = tmp_path_factory.mktemp("fuzz-baseline")
    (folder / "golden.jsonl").write_text(GOLDEN, "utf-8")
    result = run_cli(
        ["run", "--dataset", "golden.jsonl", "--target-url", good_target.url,
         "--output", "baseline.json", "--worst", "0"],
        folder,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return folder / "baseline.json"


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory, baseline: Path) -> Path:
    """The baseline judged by an honest loopback judge: the labels' and calibration's report."""
    folder = tmp_path_factory.mktemp("fuzz-judged")
    path = folder / "judged.json"
    path.write_bytes(baseline.read_bytes())
    with LoopbackJudge() as judge:
        (folder / "evaluator.toml").write_text(
            f'reports_dir = "{folder}"\n[judge]\nurl = "{judge.url}"\nmodel = "m"\n', "utf-8"
        )
        result = run_cli(["judge", "--config", "evaluator.toml", "judged.json"], folder)
    assert result.returncode == 0, result.stderr
    return path


def _params(delivery: Delivery) -> list[object]:
    marks = lambda a: (  # noqa: E731
        [pytest.mark.xfail(strict=False, reason=r)] if (r := known_failure(a.id)) else []
    )
    return [pytest.param(a, id=f"{a.seed}-{a.id}", marks=marks(a)) for a in attacks_for(delivery)]


def _check(attack: Attack, problems: list[str]) -> None:
    assert not problems, f"{attack.describe()}: {problems}"


@pytest.mark.parametrize("attack", _params("golden"))
def test_golden_set(attack: Attack, tmp_path: Path, good_target: LoopbackServer) -> None:
    """``validate`` names every problem and ``run`` scores or refuses, without crashing."""
    (tmp_path / "golden.jsonl").write_bytes(attack.data)
    checked = run_cli(["validate", "golden.jsonl"], tmp_path, key=f"validate {attack.id}")
    ran = run_cli(
        ["run", "--dataset", "golden.jsonl", "--target-url", good_target.url,
         "--output", "out.json", "--worst", "3"],
        tmp_path,
        key=f"run {attack.id}",
    )  # fmt: skip
    written = [] if ran.returncode != 0 or (tmp_path / "out.json").exists() else ["no report"]
    _check(attack, checked.problems() + ran.problems() + written)


def _literal_in(report: str, path: Sequence[str | int], literal: bytes) -> bytes:
    """The report's JSON with the value at ``path`` replaced by a raw JSON literal."""
    data = json.loads(report)
    node = data
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = "@@FRAGMENT@@"
    return json.dumps(data).encode().replace(b'"@@FRAGMENT@@"', literal)


_REPORT_SLOTS: dict[str, Sequence[str | int]] = {
    "case_id": ("cases", 0, "id"),
    "run_id": ("run_id",),
    "mrr": ("cases", 0, "mrr"),
    "recall": ("summary", "recall_at_k"),
    "latency": ("cases", 1, "latency_seconds"),
    "n_cases": ("case_count",),
    "cost": ("cases", 0, "cost"),
}


@pytest.mark.parametrize("attack", _params("report"))
def test_report_fed_to_gate(attack: Attack, tmp_path: Path, baseline: Path) -> None:
    """The gate judges, fails or refuses a forged candidate, in one verdict line at most."""
    text = baseline.read_text("utf-8")
    if attack.slot == "body":
        candidate = attack.data
    else:
        slot = {"text": "case_id", "number": "mrr"}.get(attack.slot, attack.slot)
        candidate = _literal_in(text, _REPORT_SLOTS[slot], attack.data)
    (tmp_path / "candidate.json").write_bytes(candidate)
    (tmp_path / "baseline.json").write_text(text, "utf-8")
    for output in ("text", "markdown", "json"):
        # the text round writes the HTML report too: its case table, by-tag breakdown and
        # baseline-beside-candidate diffs render whatever the forged report holds
        html = ["--html", "gate.html"] if output == "text" else []
        result = run_cli(
            ["gate", "--baseline", "baseline.json", "--candidate", "candidate.json",
             "--format", output, *html],
            tmp_path,
            key=f"gate {output} {attack.id}",
        )  # fmt: skip
        verdicts = [ln for ln in result.stdout.splitlines() if ln.lstrip().startswith("verdict:")]
        forged = [] if len(verdicts) <= 1 else [f"{len(verdicts)} verdict lines: {verdicts}"]
        _check(attack, result.problems(frozenset({0, 1, 2})) + forged)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _toml_number(literal: str) -> str:
    return {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}.get(literal, literal)


def _header_value(fragment: str, env: dict[str, str], name: str) -> str:
    """The TOML text of a header value holding ``fragment``: through ``${name}`` when the
    environment can hold it, else written in the file (NUL and lone surrogates)."""
    value = json.loads(fragment)
    if "\x00" in value or any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        return fragment[1:-1]
    env[name] = value
    return f"${{{name}}}"


@pytest.mark.parametrize("attack", _params("config"))
def test_config_value(attack: Attack, tmp_path: Path) -> None:
    """``check`` accepts the value or stops naming the field, without echoing a secret: a
    header value of a target or of the judge that cannot be sent is refused naming its
    field, and a judge url whose port is not one is refused naming ``judge.url``."""
    (tmp_path / "golden.jsonl").write_text(GOLDEN, "utf-8")
    fragment = attack.data.decode("utf-8", "surrogatepass")
    env: dict[str, str] = {}
    header, judge_header, judge_port, timeout = "fuzz", "fuzz", "9", "5"
    if attack.slot == "header":
        header = _header_value(fragment, env, "FUZZ_VALUE")
    elif attack.slot == "judge_header":
        judge_header = _header_value(fragment, env, "FUZZ_JUDGE_VALUE")
    elif attack.slot == "judge_url":
        judge_port = fragment[1:-1]
    elif attack.slot == "k_env":
        env["EVALUATOR_K"] = fragment
    else:
        timeout = _toml_number(fragment)
    (tmp_path / "evaluator.toml").write_text(
        f"""reports_dir = "{tmp_path / "reports"}"
[judge]
url = "http://127.0.0.1:{judge_port}/v1/chat/completions"
model = "m"
headers = {{ Authorization = "Bearer ${{FUZZ_TOKEN}}", X-Fuzz = "{judge_header}" }}
[[targets]]
name = "t"
url = "http://127.0.0.1:9/rag"
timeout_seconds = {timeout}
request.headers = {{ Authorization = "Bearer ${{FUZZ_TOKEN}}", X-Fuzz = "{header}" }}
[[jobs]]
target = "t"
dataset = "golden.jsonl"
""",
        "utf-8",
    )
    result = run_cli(["check", "--config", "evaluator.toml"], tmp_path, env, f"check {attack.id}")
    refused = []
    out = result.stdout + result.stderr
    # a header value that cannot be sent is refused at check, naming the field (24.8, 38.9)
    field = {"header": "headers.X-Fuzz", "judge_header": "judge"}.get(attack.slot)
    if (
        field is not None
        and _CONTROL.search(json.loads(fragment))
        and (result.returncode != 1 or field not in out)
    ):
        refused = [f"a header value with a control character: check exit {result.returncode}"]
    # a judge url whose port could not be connected to is refused at check, naming it (38.9)
    if attack.slot == "judge_url" and not _a_port(json.loads(fragment)):
        named = "judge.url" in out or "invalid TOML" in out  # a TOML string may not hold it
        if result.returncode != 1 or not named:
            refused.append(f"a judge url with port {fragment}: check exit {result.returncode}")
    _check(attack, result.problems() + refused)


def _a_port(text: str) -> bool:
    return text.isascii() and text.isdigit() and 0 < int(text) < 65536


_SLO_JOBS = """[[targets]]
name = "t"
url = "http://127.0.0.1:9/rag"
request.headers = { Authorization = "Bearer ${FUZZ_TOKEN}" }
[[jobs]]
target = "t"
dataset = "golden.jsonl"
interval_seconds = 60
"""


@pytest.mark.parametrize("attack", _params("openslo"))
def test_openslo_file(attack: Attack, tmp_path: Path) -> None:
    """``check`` reads the OpenSLO file or stops naming the field, without crashing, in
    bounded time and memory, echoing no secret and no control character."""
    (tmp_path / "golden.jsonl").write_text(GOLDEN, "utf-8")
    (tmp_path / "slos.yaml").write_bytes(attack.data)
    (tmp_path / "evaluator.toml").write_text(
        f'openslo_files = ["slos.yaml"]\nreports_dir = "{tmp_path / "reports"}"\n{_SLO_JOBS}',
        "utf-8",
    )
    result = run_cli(["check", "--config", "evaluator.toml"], tmp_path, key=f"check {attack.id}")
    rules = run_cli(["slo", "rules", "--config", "evaluator.toml"], tmp_path,
                    key=f"slo rules {attack.id}")  # fmt: skip
    _check(attack, result.problems() + rules.problems())


@pytest.mark.parametrize("attack", _params("slo_config"))
def test_slo_table(attack: Attack, tmp_path: Path) -> None:
    """``check`` reads the ``[[slos]]`` table or stops naming the field, as for any setting."""
    (tmp_path / "golden.jsonl").write_text(GOLDEN, "utf-8")
    table = attack.data.decode("utf-8", "surrogatepass")
    (tmp_path / "evaluator.toml").write_text(
        f'reports_dir = "{tmp_path / "reports"}"\n{_SLO_JOBS}{table}', "utf-8", "surrogatepass"
    )
    result = run_cli(["check", "--config", "evaluator.toml"], tmp_path, key=f"check {attack.id}")
    rules = run_cli(["slo", "rules", "--config", "evaluator.toml"], tmp_path,
                    key=f"slo rules {attack.id}")  # fmt: skip
    _check(attack, result.problems() + rules.problems())


@pytest.mark.parametrize("attack", _params("collector"))
def test_collector_reply(attack: Attack, tmp_path: Path, good_target: LoopbackServer) -> None:
    """Whatever the collector replies, ``run`` exits 0 with its report, in bounded time
    and memory."""
    (tmp_path / "golden.jsonl").write_text(GOLDEN, "utf-8")
    with ScriptedRawServer({"/v1/traces": list(attack.pieces)}) as collector:
        (tmp_path / "evaluator.toml").write_text(
            f"""reports_dir = "{tmp_path / "reports"}"
[otlp]
enabled = true
endpoint = "{collector.url_of("/v1/traces")}"
timeout_seconds = 2
[[targets]]
name = "t"
url = "{good_target.url}"
request.headers = {{ Authorization = "Bearer ${{FUZZ_TOKEN}}" }}
[[jobs]]
target = "t"
dataset = "golden.jsonl"
""",
            "utf-8",
        )
        result = run_cli(
            ["run", "--config", "evaluator.toml", "--output", "out.json", "--worst", "0"],
            tmp_path,
            key=f"run {attack.id}",
        )  # fmt: skip
        asked = collector.requests
    written = [] if (tmp_path / "out.json").exists() else ["no report written"]
    exported = [] if asked else ["the collector was never asked"]
    _check(attack, result.problems(frozenset({0})) + written + exported)


@pytest.mark.parametrize("attack", _params("judge"))
def test_judge_response(attack: Attack, tmp_path: Path, baseline: Path) -> None:
    """Whatever the judge answers, ``evaluator judge`` writes the judged report (or says
    why not) in bounded time and memory, and neither it nor the terminal holds the judge's
    credential, a control character or an internal error."""
    report = tmp_path / "r.json"
    report.write_bytes(baseline.read_bytes())
    with ScriptedRawServer({"/v1/chat/completions": list(attack.pieces)}) as judge:
        (tmp_path / "evaluator.toml").write_text(
            f"""reports_dir = "{tmp_path}"
[judge]
url = "{judge.url_of("/v1/chat/completions")}"
model = "m"
headers = {{ Authorization = "Bearer ${{FUZZ_TOKEN}}" }}
timeout_seconds = 5
retries = 0
max_response_bytes = 8388608
""",
            "utf-8",
        )
        result = run_cli(
            ["judge", "--config", "evaluator.toml", "r.json"], tmp_path, key=f"judge {attack.id}"
        )
    written = report.read_text("utf-8", errors="replace")
    judged = [] if result.returncode != 0 or '"judge":' in written else ["no judge block"]
    _check(attack, result.problems() + leaks("report", written) + judged)


@pytest.mark.parametrize("attack", _params("labels"))
def test_labels_file(attack: Attack, tmp_path: Path, judged: Path) -> None:
    """``calibrate`` and ``review`` read any labels file or refuse it naming the line,
    without an internal error or a control character on the terminal; labels matching no
    judged answer (each attack's are of another answer) never replace the stored
    calibration: ``calibrate`` exits 1 and writes none."""
    (tmp_path / "labels.jsonl").write_bytes(attack.data)
    (tmp_path / "evaluator.toml").write_text(f'reports_dir = "{tmp_path}"\n', "utf-8")
    calibrated = run_cli(
        ["calibrate", "--config", "evaluator.toml", "--labels", "labels.jsonl", str(judged)],
        tmp_path,
        key=f"calibrate {attack.id}",
    )
    reviewed = run_cli(
        ["review", str(judged), "--labels", "labels.jsonl", "--reviewer", "fuzz"],
        tmp_path,
        key=f"review {attack.id}",
    )
    stored = tmp_path / "judge-calibration.json"
    kept = [] if calibrated.returncode == 1 and not stored.exists() else ["calibration written"]
    _check(attack, calibrated.problems() + reviewed.problems() + kept)


@pytest.mark.parametrize("attack", _params("calibration"))
def test_stored_calibration(attack: Attack, tmp_path: Path, judged: Path) -> None:
    """A stored calibration whose figures do not follow from its table (every attack's:
    kappa 0.95 stated over a table whose kappa is 0.959) never lets a hard judged rule
    gate: exit 1, in one verdict line at most, whatever else the file holds."""
    (tmp_path / "judge-calibration.json").write_bytes(attack.data)
    (tmp_path / "evaluator.toml").write_text(f'reports_dir = "{tmp_path}"\n', "utf-8")
    (tmp_path / "gates.toml").write_text(
        "[rules.recall_at_k]\nmax_drop = 0.5\n[judged.judged_fact_recall]\nmin = 0.1\n", "utf-8"
    )
    result = run_cli(
        ["gate", "--config", "evaluator.toml", "--gates", "gates.toml",
         "--baseline", str(judged), "--candidate", str(judged)],
        tmp_path,
        key=f"gate-judged {attack.id}",
    )  # fmt: skip
    verdicts = [ln for ln in result.stdout.splitlines() if ln.lstrip().startswith("verdict:")]
    forged = [] if len(verdicts) <= 1 else [f"{len(verdicts)} verdict lines: {verdicts}"]
    _check(attack, result.problems(frozenset({1})) + forged)


def _one_per_pair(delivery: Delivery) -> list[object]:
    """:func:`_params`, the first attack of each (seed, surface, block) only: a process per
    attack, and the daemon's tier already serves every variant."""
    seen: set[tuple[int, str, str]] = set()
    kept = []
    for param in _params(delivery):
        attack = param.values[0]  # type: ignore[attr-defined]
        assert isinstance(attack, Attack)
        pair = (attack.seed, attack.surface.name, attack.block)
        if pair not in seen:
            seen.add(pair)
            kept.append(param)
    return kept


@pytest.mark.parametrize("attack", _one_per_pair("target"))
def test_probe_of_a_hostile_target(attack: Attack, tmp_path: Path) -> None:
    """``probe`` shows what a hostile target sent, or says why it cannot: exit 0 or 1, the
    body's control characters escaped, no secret form echoed back, no internal error, in
    bounded time and memory."""
    path = "/" + attack.slug
    with ScriptedRawServer({path: list(attack.pieces)}) as server:
        (tmp_path / "targets.toml").write_text(
            f'[[targets]]\nname = "{attack.slug}"\nurl = "{server.url_of(path)}"\n'
            f"{attack.surface.target_toml}\n",
            "utf-8",
        )
        result = run_cli(
            ["probe", "--target-config", "targets.toml", "--question", "q0"],
            tmp_path,
            key=f"probe {attack.id}",
        )
    _check(attack, result.problems())
