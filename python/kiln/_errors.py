"""Kiln's exceptions: kiln.Error per runtime status code, and CompileError."""

import enum

from . import _kiln

StatusCode = enum.IntEnum("StatusCode", _kiln.STATUS_CODES, module=__package__)
StatusCode.__doc__ = "The runtime's status codes (kiln_status_code_t in kiln/runtime.h)."


class Error(Exception):
    """An error the Kiln runtime reported.

    ``code`` is its status code (a :class:`StatusCode`), ``code_name`` the
    code's name ("INVALID_ARGUMENT"), and the message, ``str(error)``, the
    runtime's: it names the file, input or device at fault. Each code raises
    its own subclass (InvalidArgumentError, FileError, ...).
    """

    #: The code raised as this class; a plain Error carries its own.
    default_code = StatusCode.INTERNAL

    def __init__(self, message, code=None):
        super().__init__(message)
        code = self.default_code if code is None else code
        try:
            self.code = StatusCode(code)
        except ValueError:  # a code newer than these bindings
            self.code = int(code)

    @property
    def code_name(self):
        """The status code's name, e.g. "INVALID_ARGUMENT"."""
        if isinstance(self.code, StatusCode):
            return self.code.name
        return f"UNKNOWN_{self.code}"

    @property
    def message(self):
        """The runtime's message."""
        return self.args[0] if self.args else ""


class InvalidArgumentError(Error, ValueError):
    """Something passed in was wrong: an unknown input name, a missing input,
    a wrong dtype or shape, a malformed device spec."""

    default_code = StatusCode.INVALID_ARGUMENT


class FileError(Error, OSError):
    """A file could not be opened, read, mapped or written (IO_ERROR)."""

    default_code = StatusCode.IO_ERROR


class InvalidArtifactError(Error):
    """The artifact is malformed or corrupted: it failed validation."""

    default_code = StatusCode.INVALID_ARTIFACT


class UnsupportedError(Error):
    """A valid request this build or machine cannot serve: an unknown device,
    no GPU, no code object for the device's target."""

    default_code = StatusCode.UNSUPPORTED


class OutOfMemoryError(Error, MemoryError):
    default_code = StatusCode.OUT_OF_MEMORY


class InternalError(Error):
    default_code = StatusCode.INTERNAL


class UnavailableError(Error):
    """The request was not run (a batcher's queue was full); retry later."""

    default_code = StatusCode.UNAVAILABLE


class DeadlineExceededError(Error, TimeoutError):
    """The run passed its time limit (Session's run_timeout_ms) and was
    stopped."""

    default_code = StatusCode.DEADLINE_EXCEEDED


ERROR_CLASSES = {
    cls.default_code: cls
    for cls in (InvalidArgumentError, FileError, InvalidArtifactError, UnsupportedError,
                OutOfMemoryError, InternalError, UnavailableError, DeadlineExceededError)
}
_kiln._set_error_classes(Error, {int(code): cls for code, cls in ERROR_CLASSES.items()})


class CompileError(Exception):
    """kiln-compile failed (or could not be run).

    ``diagnostics`` is what it wrote on stderr, ``returncode`` its exit status
    (None when it could not be started), ``command`` the command line.
    """

    def __init__(self, message, diagnostics="", returncode=None, command=()):
        super().__init__(message)
        self.diagnostics = diagnostics
        self.returncode = returncode
        self.command = list(command)
