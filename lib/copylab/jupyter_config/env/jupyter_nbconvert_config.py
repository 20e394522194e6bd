# Installed by the Makefile (with the virtualenv) into <environment>/etc/jupyter/, which is on Jupyter's
# config path for every jupyter command run from that environment: `jupyter nbconvert` takes copylab's
# settings (offline HTML, webpdf with the installed Chromium) with no JUPYTER_CONFIG_PATH to set. The
# settings themselves stay in the package (copylab/jupyter_config/jupyter_nbconvert_config.py), so an
# editable install follows the checkout. Without copylab importable, nothing is changed.
from importlib.util import find_spec
from pathlib import Path

_spec = find_spec("copylab")
if _spec is not None and _spec.origin:
    load_subconfig("jupyter_nbconvert_config.py", path=str(Path(_spec.origin).parent / "jupyter_config"))  # noqa: F821
