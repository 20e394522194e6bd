# The server `make lab` starts (copylab lab puts this folder first on JUPYTER_CONFIG_PATH).
from pathlib import Path

# Its own nbconvert (File > Save and Export As) reads the server's settings, not
# jupyter_nbconvert_config: the same settings, loaded from the file beside this one.
load_subconfig("jupyter_nbconvert_config.py", path=str(Path(__file__).resolve().parent))  # noqa: F821

c = get_config()  # noqa: F821
# jupyter_server's kernel and terminal websockets keep themselves alive with their own timer, in
# milliseconds (WebSocketMixin: a ping every ws_ping_interval, closed after ws_ping_timeout without a
# pong: 30000 and 90000 by default). The same two properties are Tornado's own keep-alive, in seconds,
# and Tornado >= 6.5 warns on every first connection that a timeout longer than the interval is
# shortened ("The websocket_ping_timeout (90000) cannot be longer than the websocket_ping_interval
# (30000)"; jupyter_server issue 1612). No pair satisfies both readings: a timeout at or below the
# interval makes the mixin close a healthy connection whenever its timer fires a little late. The lab
# serves localhost only, where a closed browser closes its socket at once, so neither keep-alive is
# needed: interval 0 turns both off, and with it the warning.
c.ServerApp.tornado_settings = {"ws_ping_interval": 0}
