"""`citewise upgrade [--yes]`, `citewise backup list|restore ID [--yes]`,
`citewise version [--check]`, and the start gate every other command passes first.

These run before (and without) the App: the data they handle may be in a format the App cannot
open. Nothing upgrades, restores or asks the network unless the person runs the command.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from actors import ConfigError, UpgradeError, WriterBusy, app_version, data_home
from cli.output import EXIT_FAIL, EXIT_OK, EXIT_USAGE, emit_json

if TYPE_CHECKING:
    from actors import Inspection


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def gate(command: str) -> Inspection:
    """Run before a command opens the data: refuses (raises) or lets it through."""
    from actors import open_data

    root = data_home()
    found = open_data(root, command, writes=command != "status")
    if found.state == "older":
        _say(
            f"note: the data in {root} needs an upgrade before Citewise can change it; run "
            "`citewise upgrade` to see what changes"
        )
    return found


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "upgrade",
        parents=[common],
        help="upgrade data written by an older Citewise (explains first, then asks)",
    )
    p.add_argument("--yes", action="store_true", help="upgrade without asking")
    p.set_defaults(func=None, sync_func=cmd_upgrade)

    p = sub.add_parser(
        "backup", parents=[common], help="list backups, make one now, or restore one"
    )
    p.add_argument("action", nargs="?", choices=["list", "create", "restore"], default="list")
    p.add_argument("id", nargs="?")
    p.add_argument("--yes", action="store_true", help="restore without asking")
    p.set_defaults(func=None, sync_func=cmd_backup)

    p = sub.add_parser(
        "version", parents=[common], help="this version; --check: is a newer one there?"
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="look for newer builds installed beside this one and ask the update feed",
    )
    p.set_defaults(func=None, sync_func=cmd_version)


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    _say(question + " [y/N] ")
    return sys.stdin.readline().strip().lower() in {"y", "yes"}


def cmd_upgrade(args: argparse.Namespace) -> int:
    from actors import explain_upgrade, open_data, run_upgrade

    root = data_home()
    try:
        open_data(root, "upgrade")
        plan = explain_upgrade(root)
        if plan is None:
            if args.json:
                emit_json({"upgraded": False, "reason": "up to date", "data_dir": str(root)})
            else:
                print(f"the data in {root} is up to date; nothing to upgrade")
            return EXIT_OK
        _say(plan.text())
        if not args.yes and not _confirm("Upgrade now?"):
            _say("nothing was changed; run `citewise upgrade --yes` to upgrade")
            return EXIT_USAGE
        report = run_upgrade(root)
    except (UpgradeError, WriterBusy) as exc:
        _say(f"error: {exc}")
        return EXIT_FAIL
    if args.json:
        emit_json({"upgraded": report is not None, "report": report, "data_dir": str(root)})
    elif report is not None:
        print(
            f"upgraded {root}: {report.files} new files; the data from before is in backup "
            f"{report.backup_id} (`citewise backup restore {report.backup_id}` goes back)"
        )
    return EXIT_OK


def cmd_backup(args: argparse.Namespace) -> int:
    from actors import backups, create_backup, open_data, restore_backup

    root = data_home()
    try:
        open_data(root, "backup")
        if args.action == "list":
            found = backups(root)
            if args.json:
                emit_json({"data_dir": str(root), "backups": found})
                return EXIT_OK
            if not found:
                print(f"no backups in {root / 'backups'}")
            for b in found:
                made_by = b.app_version or "an earlier version"
                print(
                    f"{b.backup_id}  {b.created_at}  {b.reason}  (data of {made_by}; "
                    f"{b.files} files, {(b.bytes_copied + b.bytes_shared) / (1 << 20):.1f} MB)"
                )
            return EXIT_OK
        if args.action == "create":
            info = create_backup(root)
            if args.json:
                emit_json(info)
            else:
                print(
                    f"backed up {root} as {info.backup_id} ({info.files} files; keys are "
                    f"never in backups); `citewise backup restore {info.backup_id}` goes back"
                )
            return EXIT_OK
        if not args.id:
            _say("`citewise backup restore` needs a backup id; see `citewise backup list`")
            return EXIT_USAGE
        question = (
            f"Replace the data in {root} with backup {args.id}? The data as it is now is "
            "backed up first."
        )
        if not args.yes and not _confirm(question):
            _say(f"nothing was changed; run `citewise backup restore {args.id} --yes`")
            return EXIT_USAGE
        report = restore_backup(root, args.id)
    except (UpgradeError, WriterBusy) as exc:
        _say(f"error: {exc}")
        return EXIT_FAIL
    if args.json:
        emit_json(report)
        return EXIT_OK
    print(
        f"restored backup {report.backup_id}; the data it replaced is in backup "
        f"{report.safety_backup_id}"
    )
    if report.state == "older":
        print("this version must upgrade the restored data first: run `citewise upgrade`")
    return EXIT_OK


def cmd_version(args: argparse.Namespace) -> int:
    from actors import check_for_updates, install_folder, settings_at

    running = app_version()
    if not args.check:
        if args.json:
            emit_json({"running": running})
        else:
            print(f"citewise {running}")
        return EXIT_OK
    try:
        config = settings_at(data_home())
    except ConfigError as exc:
        _say(f"error: {exc}")
        return EXIT_USAGE
    report = check_for_updates(
        running,
        folder=install_folder(),
        feed_url=config.updates.feed_url,
        proxy=config.network.proxy or None,
        ca_bundle=config.network.ca_bundle or None,
    )
    if args.json:
        emit_json(report)
        return EXIT_OK
    print(f"citewise {running}")
    for build in report.newer_installed:
        print(f"a newer version {build.version} is installed in {build.path}")
    if report.available is not None:
        a = report.available
        print(f"version {a.version} is available{': ' + a.url if a.url else ''}")
        if a.notes:
            print(a.notes)
    elif report.feed_url and not report.feed_error:
        print("no newer version is published")
    if not report.feed_url:
        print("no update feed is configured ([updates] feed_url); nothing was asked online")
    if report.feed_error:
        _say(f"error: {report.feed_error}")
        return EXIT_FAIL
    print("nothing is installed or updated automatically")
    return EXIT_OK
