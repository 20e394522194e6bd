"""`copylab clean`: remove namespaces and processes left behind by crashed copylab runs."""

from __future__ import annotations

from .topology import clean_leftovers, namespace_support


def register(subparsers) -> None:
    p = subparsers.add_parser("clean", help="remove leftover copylab namespaces and benchmark processes")
    p.add_argument("--all", action="store_true",
                   help="also remove namespaces of copylab runs that are still alive")
    p.set_defaults(func=clean_command)


def clean_command(args) -> int:
    ok, reason = namespace_support()
    if not ok:
        print(f"copylab clean: note: {reason}; only processes were checked")
    result = clean_leftovers(include_live=args.all)
    for ns in result["removed_namespaces"]:
        print(f"removed namespace {ns}")
    for pid in result["killed_processes"]:
        print(f"killed leftover benchmark process {pid}")
    for ns in result["kept_live_namespaces"]:
        print(f"kept {ns}: its copylab run is still alive (use --all to remove it)")
    if not any(result.values()):
        print("nothing to clean")
    return 0
