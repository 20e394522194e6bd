"""copylab: what data movement costs in Linux TCP I/O (A1 send, A2 sendmsg, A3 MSG_ZEROCOPY)."""


def __getattr__(name: str):
    """__version__ on first use (PEP 562): reading the installed metadata costs every command's start
    a fifth of a second, and only the report, the bundle and --version say it."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("copylab")  # pyproject.toml's, the one place it is written
    except PackageNotFoundError:  # the sources on PYTHONPATH without an install
        found = "unknown"
    globals()["__version__"] = found
    return found


def _skip_iri_grammar() -> None:
    """jsonschema (under nbformat, papermill and nbconvert) imports rfc3987_syntax when it is installed
    (jupyter-events asks for it), which builds an Earley parser of RFC 3987 at import: 1.3 s of CPU in
    every sweep and report process, for a check ("iri" formats) no notebook schema uses. A None in
    sys.modules makes that import fail as if the package were absent, and jsonschema goes without it.
    Only copylab's own processes: a Jupyter server started on its own keeps its checks."""
    import sys

    sys.modules.setdefault("rfc3987_syntax", None)


_skip_iri_grammar()
