"""``plansuite-serve EXPORT [NAME=EXPORT ...]``: local NL→PDDL models over an OpenAI-compatible API.

Serves ``problem_generator`` exports (``plansuite-train model=problem_generator``) at
``http://HOST:PORT/v1`` (``/v1/models``, ``/v1/chat/completions``) until interrupted, e.g.::

    plansuite-serve outputs/nl2pddl/pg/export --port 8000
    plansuite-nl2pddl task=repair data_dir=D backend=openai \\
        backend.base_url=http://127.0.0.1:8000/v1 backend.model=export

A model is named by ``NAME=`` or else by its export folder. The server (uvicorn, see
:mod:`plansuite.nl2pddl.chat_server`) refuses bodies over ``--max-body`` bytes, bodies not received
within ``--read-timeout`` seconds and, while one request generates, more than ``--max-waiting``
queued ones (503, which clients retry); every client error is a 4xx JSON error. The first line printed is
``serving NAME[, NAME] at URL`` (with ``--port 0`` the URL carries the free port chosen). Bad
input (a missing export, a busy port) is one ``error:`` line and exit 1.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from plansuite.cli import friendly_errors
from plansuite.errors import ConfigError
from plansuite.nl2pddl.chat_server import ChatService, ServerLimits, make_server
from plansuite.nl2pddl.models.learned import LocalGenerator


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="plansuite-serve", description=__doc__.split("\n\n")[0])
    p.add_argument("exports", nargs="+", metavar="[NAME=]EXPORT",
                   help="a problem_generator export directory, optionally named")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default: localhost only)")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    p.add_argument("--device", default="cpu")
    p.add_argument("--temperature", type=float, default=0.0, help="first attempts (0: greedy)")
    p.add_argument("--retry-temperature", type=float, default=0.8, help="repair attempts")
    p.add_argument("--samples", type=int, default=4, help="continuations drawn per repair")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-body", type=int, default=ServerLimits.max_body, metavar="BYTES",
                   help="largest request body accepted (413 beyond)")
    p.add_argument("--read-timeout", type=float, default=ServerLimits.read_timeout, metavar="S",
                   help="seconds a request body may take to arrive (408 beyond)")
    p.add_argument("--max-waiting", type=int, default=ServerLimits.max_waiting, metavar="N",
                   help="requests queued behind the one generating (503 beyond)")
    p.add_argument("--max-connections", type=int, default=ServerLimits.max_connections, metavar="N",
                   help="open connections (503 beyond)")
    return p


def named_exports(specs: list[str]) -> dict[str, Path]:
    """``NAME=DIR`` or ``DIR`` (named by its folder) -> {name: dir}; a repeated name is an error.

    >>> named_exports(["runs/pg/export", "small=runs/pg2/export"])
    {'export': PosixPath('runs/pg/export'), 'small': PosixPath('runs/pg2/export')}
    """
    out: dict[str, Path] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        name, path = (name, path) if sep else (Path(spec).name, spec)
        if not name or name in out:
            raise ConfigError(f"{spec}: {'empty' if not name else 'repeated'} model name "
                              "(write NAME=EXPORT)")
        out[name] = Path(path)
    return out


@friendly_errors
def run(args: argparse.Namespace) -> None:
    from transformers.utils import logging as hf_logging

    try:
        limits = ServerLimits(args.max_body, args.read_timeout, args.max_waiting, args.max_connections)
    except ValueError as exc:
        name = str(exc).split()[0]
        raise ConfigError(f"--{name.replace('_', '-')}{str(exc).removeprefix(name)}") from exc
    hf_logging.disable_progress_bar()  # weight-loading bars would bury the "serving ..." line
    models = {name: LocalGenerator(path, device=args.device, temperature=args.temperature,
                                   retry_temperature=args.retry_temperature, samples=args.samples,
                                   seed=args.seed)
              for name, path in named_exports(args.exports).items()}
    try:
        server = make_server(ChatService(models), args.host, args.port, limits)
    except (OSError, OverflowError) as exc:  # a busy port, an unknown host, port 70000
        raise ConfigError(f"cannot listen on {args.host}:{args.port} ({getattr(exc, 'strerror', None) or exc})") from exc
    host, port = server.server_address[:2]
    print(f"serving {', '.join(models)} at http://{host}:{port}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def main(argv: list[str] | None = None) -> None:
    run(parser().parse_args(argv))


if __name__ == "__main__":
    main()
