"""The one exception type the CLI turns into a one-line message and a non-zero exit."""


class CopylabError(Exception):
    """A problem the user can fix (bad parameter, missing tool, missing file).

    The message is one line that names what was wrong; the CLI prints it without a traceback.
    """

    exit_code = 2


class MeasurementError(CopylabError):
    """A grid point that could not be measured (a process died, a namespace vanished)."""

    exit_code = 1


class ErrorKind:
    """Why a point failed, as a word the sweep can act on (the results column `error_kind`);
    the `error` column holds the one-line message for people."""

    NONE = ""
    SERVER = "server_failed"          # the server exited, did not listen or did not stop
    CLIENT = "client_failed"          # the client exited with an error
    NAMESPACE_LOST = "namespace_lost"  # a namespace of the topology vanished: open a fresh pair
    HOST_LOST = "host_lost"           # the ssh connection to a host ended: reconnect, or stop
    TIMEOUT = "timeout"               # the point ran past its deadline
    NO_RESULT = "no_result"           # a program printed no JSON result
    NOT_VERIFIED = "not_verified"     # the received bytes did not match the pattern
    NOTEBOOK = "notebook_failed"      # the experiment notebook raised before writing a record
    KERNEL_DIED = "kernel_died"       # the notebook's kernel died or stopped answering
    STOPPED = "stopped"               # a side's process was stopped (SIGSTOP) during the run
    STRETCHED = "window_stretched"    # the window lasted far longer on the wall clock than asked
    COUNTERS = "counters_invalid"     # perf stat printed a value no counter can hold
    VALUES = "values_invalid"         # a program's result held a value no measurement can be (emptied)
