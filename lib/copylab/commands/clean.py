"""`copylab clean`: remove the network namespaces and benchmark processes left behind by copylab runs
that crashed or were killed; only those carrying copylab's own prefix, and only runs that are gone
unless --all. Measured results are never touched."""

from __future__ import annotations

from ..topology import clean_leftovers, namespace_support


def register(subparsers) -> None:
    p = subparsers.add_parser("clean", help="remove leftover copylab namespaces and benchmark processes")
    p.add_argument("--all", action="store_true",
                   help="also remove namespaces of copylab runs that are still alive")
    p.set_defaults(func=clean_command)


def clean_command(args) -> int:
    from ..point import remove_stale_workdirs  # here: measuring's imports (numpy) at every command's start

    ok, reason = namespace_support()
    if not ok:
        print(f"copylab clean: note: {reason}; namespaces cannot be removed")
    result = clean_leftovers(include_live=args.all)
    stale = remove_stale_workdirs()
    for ns in result["removed_namespaces"]:
        print(f"removed namespace {ns}")
    for ns in result["unremovable_namespaces"]:
        print(f"could not remove namespace {ns}")
    for pid in result["killed_processes"]:
        print(f"killed leftover benchmark process {pid}")
    for path in stale:
        print(f"removed {path} left by a run that died")
    for ns in result["kept_live_namespaces"]:
        print(f"kept {ns}: its copylab run is still alive (use --all to remove it)")
    if not (any(result.values()) or stale):
        print("nothing to clean")
    return 1 if result["unremovable_namespaces"] else 0
