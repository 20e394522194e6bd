"""The one exception type the CLI turns into a one-line message and a non-zero exit."""


class CopylabError(Exception):
    """A problem the user can fix (bad parameter, missing tool, missing file).

    The message is one line that names what was wrong; the CLI prints it without a traceback.
    """

    exit_code = 2


class MeasurementError(CopylabError):
    """A grid point that could not be measured (a process died, a namespace vanished)."""

    exit_code = 1
