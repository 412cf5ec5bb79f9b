"""The LLM judge: judged checks of answers, scored by an OpenAI-compatible chat endpoint.

Deterministic scoring (:mod:`evaluator.scoring`) stays the default and the hard rules; the
judge adds judged fact recall, judged answer accuracy, judged faithfulness and judged refusal
beside them, every verdict bounded and parsed as hostile input, with canary cases that catch
a judge the target's text has talked round. See docs/judge.md.

Each judged check is one module under :mod:`evaluator.judge.checks`, registered in its
``CHECKS``; adding one is that module and that entry (docs/architecture.md, "Adding a
judged check").
"""
