"""copylab: what data movement costs in Linux TCP I/O (A1 send, A2 sendmsg, A3 MSG_ZEROCOPY)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("copylab")  # pyproject.toml's, the one place it is written
except PackageNotFoundError:  # the sources on PYTHONPATH without an install
    __version__ = "unknown"
