"""errors.py — the exceptions rally raises: one class per C status code
(rally.h), each carrying the C library's sentence and the status."""

OK = 0
EINVAL = 1
ENOMEM = 2
ESYS = 3
ECONFIG = 4
EAUTH = 5
EPROTO = 6
ETIMEDOUT = 7
EPEER = 8
EMISMATCH = 9
ESTATE = 10
ERESIZED = 11


class Error(Exception):
    """A failed rally call.  ``message`` is the C library's sentence
    (rally_errmsg), ``status`` the C status code, ``status_name`` its name
    (for example ``"RALLY_EPEER"``)."""

    status = None

    def __init__(self, message, status=None):
        if status is None:
            status = type(self).status
        super().__init__(message)
        self.message = message
        self.status = status
        self.status_name = _NAMES.get(status, "RALLY_UNKNOWN")

    def __str__(self):
        return "%s (%s)" % (self.message, self.status_name)


class ArgumentError(Error, ValueError):
    """A bad argument (RALLY_EINVAL): a wrong dtype, a non-contiguous or
    read-only array, a root that is not a rank.  Also a ValueError."""
    status = EINVAL


class OutOfMemoryError(Error, MemoryError):
    status = ENOMEM


class SystemCallError(Error, OSError):
    """An operating-system call failed (RALLY_ESYS)."""
    status = ESYS


class ConfigError(Error):
    """A bad or unknown rally_* setting, or no library to load (RALLY_ECONFIG)."""
    status = ECONFIG


class AuthError(Error):
    status = EAUTH


class ProtocolError(Error):
    status = EPROTO


class TimeoutError(Error):  # noqa: A001 - rally's own, also an Error
    status = ETIMEDOUT


class PeerError(Error):
    """Another worker failed for good, or the job was aborted (RALLY_EPEER)."""
    status = EPEER


class MismatchError(Error):
    """Ranks disagree on a collective's arguments (RALLY_EMISMATCH)."""
    status = EMISMATCH


class StateError(Error):
    """The handle cannot be used for this any more: it is closed, or an
    earlier call failed for good (RALLY_ESTATE)."""
    status = ESTATE


class Resized(Error):
    """An elastic job went on with other workers (RALLY_ERESIZED): every
    rank went back to the newest checkpoint.  Read the input again for the
    new ``rank`` and ``world_size``, then call ``load_checkpoint`` again;
    the handle stays usable (docs/recovery.md, "Elastic jobs")."""
    status = ERESIZED


_NAMES = {
    OK: "RALLY_OK", EINVAL: "RALLY_EINVAL", ENOMEM: "RALLY_ENOMEM", ESYS: "RALLY_ESYS",
    ECONFIG: "RALLY_ECONFIG", EAUTH: "RALLY_EAUTH", EPROTO: "RALLY_EPROTO",
    ETIMEDOUT: "RALLY_ETIMEDOUT", EPEER: "RALLY_EPEER", EMISMATCH: "RALLY_EMISMATCH",
    ESTATE: "RALLY_ESTATE", ERESIZED: "RALLY_ERESIZED",
}

_CLASSES = {c.status: c for c in (ArgumentError, OutOfMemoryError, SystemCallError, ConfigError,
                                  AuthError, ProtocolError, TimeoutError, PeerError,
                                  MismatchError, StateError, Resized)}


def from_status(status, message):
    """The exception for a C status and its sentence."""
    return _CLASSES.get(status, Error)(message, status)
