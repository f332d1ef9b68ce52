"""Errors that say what is wrong before anything touches a server."""


class MysqlbenchError(Exception):
    """Base class: every error the package raises on purpose."""


class InvalidInput(MysqlbenchError, ValueError):
    """A spec, a trigger-form param or a name was rejected up front."""


class UnsafeOperation(MysqlbenchError):
    """A destructive step was refused: the target is not marked as a benchmark target, or the
    schema is not one the project created."""


class NotApplicable(MysqlbenchError):
    """The server cannot take a setting or feature; the message says which flavor/version and why."""


class TargetUnavailable(MysqlbenchError):
    """The server could not be reached or started."""
