"""Subcommands of the ``evaluator`` CLI; each module has ``configure(parser)`` (its flags),
``Options`` (a frozen dataclass of them, see :mod:`evaluator.commands.flags`) and
``handle(options) -> int`` (the exit code).

Modules are imported only for the command being run, so ``evaluator validate`` does not pay
for the daemon, numpy or the HTTP stack.
"""

from __future__ import annotations

__all__ = ["COMMANDS", "EXAMPLES", "EXIT_CODES"]

#: the exit codes, as every command's --help lists them
EXIT_CODES = """exit codes:
  0    success (run: finished and at least one case scored)
  1    any other failure: bad arguments, files or configuration; no case scored
  2    the gate failed (and nothing else)
  130  interrupted (Ctrl-C); run and a live gate first write a partial report"""

#: command -> example lines for its --help
EXAMPLES: dict[str, tuple[str, ...]] = {
    "run": (
        "evaluator run --dataset evals/example.jsonl --target-url http://127.0.0.1:8900/rag",
        "evaluator run --config config/evaluator.toml --job reference/rag_cases --output r.json",
        "evaluator run --dataset evals/example.jsonl --target mypkg.rag:ask --k 10",
    ),
    "serve": (
        "evaluator serve --config config/evaluator.toml",
        "evaluator serve --dataset evals/rag_cases.jsonl --target-url http://rag:8000/ask "
        "--interval 300",
    ),
    "demo": ("evaluator demo", "evaluator demo --no-prometheus --failure-mode rerank_degraded"),
    "gate": (
        "evaluator gate --baseline reports/baseline.json --candidate reports/candidate.json",
        "evaluator gate --baseline reports/baseline.json --dataset evals/rag_cases.jsonl "
        "--target-url http://staging:8000/rag --format markdown --junit gate.xml",
    ),
    "history": ("evaluator history --config config/evaluator.toml",),
    "probe": (
        'evaluator probe --target-url http://127.0.0.1:8900/rag --question "退款申请有期限吗？"',
        "evaluator probe --target-config config/targets/chat-api.toml",
    ),
    "judge": ("evaluator judge reports/rag_cases-1a2b3c.json --config config/evaluator.toml",),
    "review": ("evaluator review reports/r.json --labels evals/labels/rag_cases.jsonl",),
    "calibrate": ("evaluator calibrate --labels evals/labels/rag_cases.jsonl reports/r.json",),
    "validate": ("evaluator validate evals/*.jsonl",),
    "check": ("evaluator check", "evaluator check --config deploy/compose/evaluator.toml"),
    "slo": (
        "evaluator slo rules --config config/evaluator.toml --output slo-rules.yml",
        "evaluator slo rules --format prometheusrule --runbook-base "
        "https://wiki.example.org/rag/RUNBOOK.md > prometheusrule.yaml",
    ),
    "completion": (
        "evaluator completion bash > ~/.local/share/bash-completion/completions/evaluator",
        "evaluator completion zsh > ~/.zfunc/_evaluator",
    ),
}

#: (name, help, module), in --help order
COMMANDS: tuple[tuple[str, str, str], ...] = (
    (
        "run",
        "run a golden set against a target once and write the report",
        "evaluator.commands.run",
    ),
    (
        "serve",
        "the daemon: run every job on its schedule, serve metrics, health and reports",
        "evaluator.commands.serve",
    ),
    (
        "demo",
        "start the bundled reference RAG service and the daemon against it",
        "evaluator.commands.demo",
    ),
    (
        "gate",
        "judge a candidate report (or a run now) against a baseline; exit 2 when it fails",
        "evaluator.commands.gate",
    ),
    (
        "report",
        "read a saved run report back: its summary, a baseline's verdict, an HTML report",
        "evaluator.commands.report",
    ),
    (
        "judge",
        "judge a saved report's answers with the configured LLM judge (judged metrics)",
        "evaluator.commands.judge",
    ),
    (
        "review",
        "label the judge's verdicts of a report in the terminal (human labels, resumable)",
        "evaluator.commands.review",
    ),
    (
        "calibrate",
        "measure the judge against human labels: agreement, Cohen's kappa, confusion",
        "evaluator.commands.calibrate",
    ),
    (
        "history",
        "a case's recent outcomes, the flaky and newly failing cases, from the history store",
        "evaluator.commands.history",
    ),
    (
        "probe",
        "send one question to a target; show the request, raw response and mapped fields",
        "evaluator.commands.probe",
    ),
    (
        "validate",
        "check golden-set files; print every problem with file:line",
        "evaluator.commands.validate",
    ),
    (
        "check",
        "check the configuration, its golden sets, mappings and gates without calling a target",
        "evaluator.commands.check",
    ),
    (
        "slo",
        "slo rules: the SLOs' recording rules and burn-rate alerts for Prometheus",
        "evaluator.commands.slo",
    ),
    (
        "completion",
        "print a shell completion script (bash, zsh or tcsh)",
        "evaluator.commands.completion",
    ),
)
