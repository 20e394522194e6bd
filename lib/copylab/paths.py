"""Where things live in a checkout. One place, so nothing else hard-codes a path."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
NATIVE_DIR = PROJECT_ROOT / "native"
BUILD_DIR = NATIVE_DIR / "build"
NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"
PARAMS_DIR = PROJECT_ROOT / "params"
OUTPUT_DIR = PROJECT_ROOT / "output"


def server_binary(impl: str, sanitize: bool = False) -> Path:
    """Path of the server binary of a native implementation of native/registry.def."""
    return BUILD_DIR / (f"{impl}_server" + ("_san" if sanitize else ""))


def client_binary(sanitize: bool = False) -> Path:
    return BUILD_DIR / ("client" + ("_san" if sanitize else ""))
