"""`kconsole account [--on-demand-advantage on|off]`: the account's Kinesis settings.

    kconsole account                              # the commitment's state, since when, earliest end
    kconsole account --on-demand-advantage on     # plan, typed confirmation (--yes without a TTY)

On-demand Advantage is the minimum throughput billing commitment (DescribeAccountSettings /
UpdateAccountSettings): it lets on-demand streams keep warm throughput. Turning it off before its
earliest allowed end leaves it ENABLED_UNTIL_EARLIEST_ALLOWED_END.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Literal

from console.commands import Parents, Subparsers, command_help
from console.commands._backend import with_backend
from console.commands._confirm import confirm_by_typing, refuse_if_read_only
from console.commands._options import options_from
from console.commands._output import emit, note, render_table, run_async
from console.errors import PlanRejected


def register(subparsers: Subparsers, common: Parents) -> None:
    parser = subparsers.add_parser(
        "account",
        parents=common,
        help=command_help("account"),
        description="Show the account's On-demand Advantage (minimum throughput billing commitment): its "
        "state, when it started and its earliest allowed end; turn it on or off with a plan and "
        "a typed confirmation (--yes without a TTY). --read-only refuses the change.",
    )
    parser.add_argument(
        "--on-demand-advantage",
        choices=("on", "off"),
        default=None,
        help="turn the commitment on or off (changes billing: asks first)",
    )
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation (needed without a TTY)")
    parser.set_defaults(handler=run_account)


@dataclass(frozen=True)
class AccountOptions:
    on_demand_advantage: Literal["on", "off"] | None = None  # None: show the commitment, change nothing


def run_account(args: argparse.Namespace) -> int:
    options = options_from(AccountOptions, args)
    if options.on_demand_advantage is not None:
        refuse_if_read_only(args, f"turn On-demand Advantage {options.on_demand_advantage}")
    return run_async(_account(args, options))


async def _account(args: argparse.Namespace, options: AccountOptions) -> int:
    from console.lifecycle import actions
    from console.reshard.actionlog import ActionLog

    async with with_backend(args) as kinesis:
        label = kinesis.label
        if options.on_demand_advantage is None:
            commitment = await actions.read_commitment(kinesis)
            document: dict[str, Any] = {"backend": label, "on_demand_advantage": commitment}
            emit(args, document, lambda: render_commitment(commitment, label))
            return 0
        plan = await actions.prepare_account(kinesis, options.on_demand_advantage == "on")
        executed = False
        if plan.refusal:
            raise PlanRejected(f"account change refused, nothing was called: {plan.refusal}")
        if not plan.is_noop:
            word = options.on_demand_advantage
            confirm_by_typing(
                args,
                word,
                what=f"{word!r}",
                change=f"turn On-demand Advantage {word}",
                consequence=plan.summary,
                preview=plan.render() + "\n",
            )
            await actions.run(
                kinesis,
                plan,
                action_log=ActionLog.default(),
                progress=lambda text: None if text.startswith("calling") else note(f"kconsole: {text}"),
            )
            executed = True
        commitment = await actions.read_commitment(kinesis)
    document = {"backend": label, "executed": executed, "plan": plan.to_json(), "on_demand_advantage": commitment}
    emit(
        args,
        document,
        lambda: plan.render() + ("\nDone.\n" if executed else "\n") + render_commitment(commitment, label),
    )
    return 0


def render_commitment(commitment: dict[str, Any], label: str) -> str:
    rows = [
        ("on-demand advantage", commitment["status"]),
        ("started", commitment["started_at"] or "-"),
        ("earliest allowed end", commitment["earliest_allowed_end_at"] or "-"),
        ("ended", commitment["ended_at"] or "-"),
        ("backend", label),
    ]
    return render_table(("SETTING", "VALUE"), rows)
