"""Command line of the reference service: ``python -m evaluator.reference [options]``."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import NoReturn

import uvicorn

from evaluator.reference.app import create_app
from evaluator.reference.failures import (
    ENV_VAR,
    KNOWN_MODES,
    UnknownFailureModeError,
    modes_from_env,
    parse_modes,
)

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "main"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8900


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on a usage error; in this project 2 means a failed gate, so exit 1."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m evaluator.reference",
        description="The bundled reference RAG service (BM25 + rerank + extractive answers).",
        epilog=(
            f"Failure modes: {', '.join(KNOWN_MODES)}. Also read from ${ENV_VAR} "
            "(comma-separated). Flip at runtime: PUT /admin/failure-modes "
            '{"modes": [...]}, or POST/DELETE /admin/failure-modes/<mode>.'
        ),
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help="bind address (default: %(default)s)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="TCP port, 0 for any (default: %(default)s)"
    )
    parser.add_argument(
        "--failure-mode",
        action="append",
        default=[],
        metavar="MODE",
        help="switch a failure mode on at start; repeatable or comma-separated",
    )
    parser.add_argument(
        "--slow-model-seconds",
        type=float,
        default=1.5,
        help="model-stage delay under slow_model (default: %(default)s)",
    )
    parser.add_argument(
        "--error-share",
        type=float,
        default=0.3,
        help="share of questions answered with HTTP 500 under server_errors (default: %(default)s)",
    )
    parser.add_argument("--log-level", default="info", help="uvicorn log level (default: info)")
    parser.add_argument(
        "--access-log",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="log every request (default: on)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the reference service until interrupted.

    Returns:
        0 after a clean shutdown, 1 on bad arguments (including unknown failure modes).
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if not 0.0 <= args.error_share <= 1.0:
        parser.error("--error-share must be between 0 and 1")
    if args.slow_model_seconds < 0:
        parser.error("--slow-model-seconds must not be negative")
    try:
        modes = modes_from_env() | parse_modes(args.failure_mode)
    except UnknownFailureModeError as exc:
        parser.error(str(exc))
    # building the app builds the index, before the server starts
    app = create_app(
        modes, slow_model_seconds=args.slow_model_seconds, error_share=args.error_share
    )
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            log_level=args.log_level,
            access_log=args.access_log,
            lifespan="off",
            ws="none",
        )
    )
    shown = ", ".join(sorted(modes)) or "none"
    print(
        f"reference RAG service: POST http://{args.host}:{args.port}/rag  "
        f"(failure modes: {shown}; admin: /admin/failure-modes)",
        file=sys.stderr,
        flush=True,
    )
    # uvicorn re-raises the Ctrl-C it has already handled: a clean stop, not a crash
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    return 0
