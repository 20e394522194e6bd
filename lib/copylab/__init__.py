"""copylab: what data movement costs in Linux TCP I/O (A1 send, A2 sendmsg, A3 MSG_ZEROCOPY)."""

__version__ = "0.1.0"
