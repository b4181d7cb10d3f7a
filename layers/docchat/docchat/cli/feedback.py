"""`docchat feedback export|delete` and `docchat eval feedback`: the rated answers of the data
directory's conversations as the team's question set (docchat.answer.feedback), and that set
asked again of today's code and index (docchat.evaluate.feedback). Whoever holds the data
directory is its admin: these read and clear every user's ratings."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.table import Table

from docchat.answer.events import collected
from docchat.answer.feedback import every_rated_question, forget_ratings
from docchat.cli import common
from docchat.cli.common import Commands, Opened, require_index
from docchat.config import Settings
from docchat.errors import ConfigError
from docchat.llm import Message
from docchat.models import Citation, RatedQuestion
from docchat.search.library import Visible


def add_commands(commands: Commands, common_parser: argparse.ArgumentParser) -> None:
    """Add `docchat feedback export` and `docchat feedback delete`."""
    feedback = commands.add_parser(
        "feedback", help="the rated answers of every user's conversations, as a question set"
    )
    kinds = feedback.add_subparsers(dest="feedback_command", required=True)
    export = kinds.add_parser(
        "export",
        parents=[common_parser],
        help="write every rated answer as JSON lines (question, turns before it, scope, "
        "citations, rating)",
    )
    export.add_argument("--out", type=Path, default=None, help="this file (default: stdout)")
    export.set_defaults(run=run_export)
    delete = kinds.add_parser(
        "delete",
        parents=[common_parser],
        help="clear every rating (the answers stay in their conversations)",
    )
    delete.add_argument("--yes", action="store_true", help="required: this cannot be undone")
    delete.set_defaults(run=run_delete)


def add_eval_command(kinds: Commands, common_parser: argparse.ArgumentParser) -> None:
    """Add `docchat eval feedback`."""
    found = kinds.add_parser(
        "feedback",
        parents=[common_parser],
        help="ask the rated answers again: how many marked good still cite the same passages, "
        "how many marked bad now cite others",
    )
    found.add_argument(
        "file",
        type=Path,
        nargs="?",
        default=None,
        metavar="FILE",
        help="a set `docchat feedback export` wrote (default: this data directory's ratings)",
    )
    found.add_argument(
        "--users",
        type=Path,
        default=None,
        metavar="FILE",
        help="ask each question as its user from this users file (default: as the admin, in "
        "the question's own scope)",
    )
    found.add_argument("--json", type=Path, metavar="PATH", help="also write each outcome here")
    found.set_defaults(run=run_eval_feedback)


def run_export(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    questions = _stored(settings, opened)
    lines = "".join(q.model_dump_json() + "\n" for q in questions)
    if args.out is None:
        sys.stdout.write(lines)
        return 0
    try:
        args.out.write_text(lines, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {args.out}: {exc.strerror or exc}") from exc
    said = "1 rated answer" if len(questions) == 1 else f"{len(questions)} rated answers"
    common.err.print(f"{said} written to {args.out}", markup=False)
    return 0


def run_delete(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    if not args.yes:
        raise ConfigError(
            "`docchat feedback delete` clears every user's ratings and cannot be undone: "
            "add --yes (and `docchat feedback export --out FILE` first to keep them)"
        )
    cleared = 0
    if settings.conversations_path.exists():
        from docchat.wiring.local import local_conversations

        cleared = forget_ratings(opened.closed_later(local_conversations(settings)))
    said = "1 rating" if cleared == 1 else f"{cleared} ratings"
    common.out.print(f"{said} cleared in {settings.conversations_path}", markup=False)
    return 0


def run_eval_feedback(args: argparse.Namespace, settings: Settings, opened: Opened) -> int:
    from docchat.evaluate.feedback import evaluate_feedback, load_rated, scores
    from docchat.serve.access import ADMIN, UsersFile
    from docchat.wiring.local import local_backend, open_local

    questions = load_rated(args.file) if args.file else _stored(settings, opened)
    users = UsersFile.load(args.users) if args.users else None
    require_index(settings)
    local = open_local(settings)
    opened.closed_later(local.file)
    backend = local_backend(settings, local)

    def visible_of(q: RatedQuestion) -> Visible | None:
        access = ADMIN if users is None else users.by_name(q.user)
        return None if access is None else access.visible(q.scope)

    def ask(turns: Sequence[Message], seen: Visible, doc_ids: list[str] | None) -> list[Citation]:
        answer = backend.within(seen).agent().run(list(turns), doc_ids=doc_ids)
        return collected(answer).citations

    outcomes = list(evaluate_feedback(questions, ask, visible_of, local.catalog.document))
    found = scores(outcomes)
    if args.json:
        rows = [
            {
                "user": o.question.user,
                "conversation_id": o.question.conversation_id,
                "position": o.question.position,
                "question": o.question.question,
                "rating": o.question.feedback.rating,
                "verdict": o.verdict,
                "cited_then": sorted(o.before),
                "cited_now": sorted(o.now),
                "documents_changed": list(o.changed),
                "why": o.why,
            }
            for o in outcomes
        ]
        args.json.write_text(json.dumps({"scores": vars(found), "outcomes": rows}, indent=2))
    if not outcomes:
        common.out.print("no rated answers to ask again", markup=False)
        return 0
    table = Table(title=f"{len(outcomes)} rated answers asked again ({backend.mode})")
    for column in ("rating", "verdict", "question", "cited then", "cited now", "note"):
        table.add_column(column)

    def name(doc_id: str) -> str:
        record = local.catalog.document(doc_id)
        return record.title if record is not None and record.title else doc_id

    for o in outcomes:
        changed = f"changed since rated: {', '.join(map(name, o.changed))}" if o.changed else ""
        note = o.why or changed
        table.add_row(
            o.question.feedback.rating,
            o.verdict,
            o.question.question,
            _pages(o.before, name),
            _pages(o.now, name),
            note,
        )
    common.out.print(table)
    common.out.print(
        f"marked good: {found.kept} of {found.good} still cite the same passages; "
        f"marked bad: {found.others} of {found.bad} now cite others"
        + (f"; {found.not_asked} not asked" if found.not_asked else ""),
        markup=False,
    )
    return 0


def _stored(settings: Settings, opened: Opened) -> list[RatedQuestion]:
    """The data directory's rated answers (none when it has no conversations yet)."""
    if not settings.conversations_path.exists():
        return []
    from docchat.wiring.local import local_conversations

    return every_rated_question(opened.closed_later(local_conversations(settings)))


def _pages(passages: frozenset[tuple[str, int]], name: Callable[[str], str]) -> str:
    return "; ".join(f"{name(doc_id)} p.{page}" for doc_id, page in sorted(passages)) or "-"
