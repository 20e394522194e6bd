# The server's own nbconvert (File > Save and Export As in `make lab`) reads the server's settings,
# not jupyter_nbconvert_config: the same settings, loaded from the file beside this one.
from pathlib import Path

load_subconfig("jupyter_nbconvert_config.py", path=str(Path(__file__).resolve().parent))  # noqa: F821
