"""_lib.py — finding and loading librally (or librally_mock) and declaring
its C functions for ctypes.

Where the library comes from, first match wins:

1. ``RALLY_LIBRARY`` (``RALLY_MOCK_LIBRARY`` for the mock library): the path
   of the shared library itself.  With only ``RALLY_LIBRARY`` set, the mock
   library is looked for beside it.
2. ``_bundled/`` beside this file: the copy a wheel carries (setup.py).
3. ``_paths.py`` beside this file: written by CMake into the build tree's
   copy of the package (``<build>/python``) and into the installed package,
   it names the directory that holds the libraries.
4. A ``build`` directory at the top of the source tree this package sits in
   (``bindings/python/rally`` -> ``../../../build``).
5. The system's loader (``ldconfig``'s cache, ``LD_LIBRARY_PATH``).

The programs (``rally-run``, ``rally-tracker``: ``tool()``) come from the
same places, the last being ``PATH``.
"""

import ctypes
import os

_NAMES = {False: "librally.so", True: "librally_mock.so"}
_SOVERSION = "0"

_loaded = None  # (mock, CDLL)


def _candidates(mock):
    name = _NAMES[mock]
    env = os.environ.get("RALLY_MOCK_LIBRARY" if mock else "RALLY_LIBRARY")
    if env:
        yield env
        return
    if mock and os.environ.get("RALLY_LIBRARY"):
        yield os.path.join(os.path.dirname(os.environ["RALLY_LIBRARY"]), name)
        return
    for d in _dirs("LIBRARY_DIR"):
        yield os.path.join(d, name)
    yield name + "." + _SOVERSION  # the system's loader


def _dirs(kind):
    """The directories to look in, in order: the wheel's copy, _paths.py's
    (kind: LIBRARY_DIR or TOOL_DIR), the source tree's build/."""
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "_bundled")
    try:
        from . import _paths  # written by CMake; absent in the source tree

        yield getattr(_paths, kind)
    except (ImportError, AttributeError):
        pass
    yield os.path.join(here, "..", "..", "..", "build")


def tool(name):
    """The path of one of rally's programs (``rally-run``, ``rally-tracker``)
    that goes with this package; raises ConfigError when there is none."""
    import shutil

    for d in _dirs("TOOL_DIR"):
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return os.path.normpath(p)
    p = shutil.which(name)
    if p:
        return p
    from .errors import ConfigError

    raise ConfigError("cannot find %s: install rally (make install, or pip install "
                      "./bindings/python) or put it on PATH" % name, 4)


def path():
    """The path of the loaded library (None before any load)."""
    return _loaded[1]._name if _loaded else None


def load(mock=False):
    """The loaded library (a ctypes.CDLL); loads it on the first call.  One
    process uses one library: asking for the other one later is an error."""
    global _loaded
    mock = bool(mock)
    if _loaded is not None:
        if _loaded[0] != mock:
            from .errors import ConfigError

            raise ConfigError(
                "this process already loaded %s; the mock and plain libraries cannot be mixed "
                "in one process (start a new one)" % _NAMES[_loaded[0]],
                4,
            )
        return _loaded[1]
    tried = []
    lib = None
    for path in _candidates(mock):
        if os.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    if lib is None:
        from .errors import ConfigError

        raise ConfigError(
            "cannot find %s: set RALLY_LIBRARY to its path (tried %s)"
            % (_NAMES[mock], ", ".join(tried)),
            4,
        )
    _declare(lib)
    _loaded = (mock, lib)
    return lib


def loaded():
    """Whether a library is loaded."""
    return _loaded is not None


def loaded_mock():
    """Whether the loaded library is the mock one (False before any load)."""
    return bool(_loaded and _loaded[0])


# The C callback types (rally.h).
PREPARE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
REDUCE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                             ctypes.c_void_p)
SERIALIZE_FN = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64)
OWNER_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, ctypes.c_int, ctypes.c_void_p)


def _declare(lib):
    P, I, Z, U64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint64
    PP = ctypes.POINTER(ctypes.c_void_p)
    PU64 = ctypes.POINTER(U64)
    PZ = ctypes.POINTER(Z)
    sigs = {
        "rally_init": (I, [ctypes.POINTER(P), ctypes.POINTER(I),
                           ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p))]),
        "rally_finalize": (I, [P]),
        "rally_errmsg": (ctypes.c_char_p, [P]),
        "rally_strstatus": (ctypes.c_char_p, [I]),
        "rally_rank": (I, [P]),
        "rally_world_size": (I, [P]),
        "rally_processor_name": (I, [P, ctypes.c_char_p, Z]),
        "rally_tracker_print": (I, [P, ctypes.c_char_p]),
        "rally_report": (I, [P, ctypes.c_char_p, ctypes.c_double]),
        "rally_report_total": (I, [P, U64]),
        "rally_free": (None, [P]),
        "rally_allreduce": (I, [P, P, Z, I, I, PREPARE_FN, P]),
        "rally_register_reducer": (I, [P, I, Z, I, REDUCE_FN, P]),
        "rally_allreduce_custom": (I, [P, P, Z, I, PREPARE_FN, P]),
        "rally_broadcast": (I, [P, P, Z, I]),
        "rally_broadcast_alloc": (I, [P, PP, PZ, I]),
        "rally_allgather": (I, [P, P, Z, P]),
        "rally_allgatherv": (I, [P, P, Z, PP, PU64]),
        "rally_load_checkpoint": (I, [P, PP, PU64, PP, PU64, PU64]),
        "rally_checkpoint": (I, [P, P, U64, P, U64]),
        "rally_lazy_checkpoint": (I, [P, SERIALIZE_FN, P]),
        "rally_checkpoint_version": (U64, [P]),
        "rally_abort": (I, [P, I, ctypes.c_char_p]),
        "rally_attempt": (I, [P]),
        "rally_set_app": (I, [P, ctypes.c_char_p, ctypes.c_char_p]),
        "rally_set_input": (I, [P, ctypes.c_char_p, ctypes.c_char_p]),
        "rally_set_local_records": (I, [P, OWNER_FN, P]),
        "rally_digest64": (U64, [P, Z]),
        # rally/data.h: the readers, for examples that read rally's data files
        "rally_data_opts_new": (I, [PP]),
        "rally_data_opts_free": (None, [P]),
        "rally_data_opts_parse": (I, [P, ctypes.c_char_p, ctypes.c_char_p, Z]),
        "rally_data_read": (I, [ctypes.c_char_p, P, I, I, PP, ctypes.c_char_p, Z]),
        "rally_data_free": (None, [P]),
        "rally_data_num_rows": (U64, [P]),
        "rally_data_num_features": (U64, [P]),
        "rally_data_csr": (None, [P, ctypes.POINTER(PU64), ctypes.POINTER(ctypes.POINTER(ctypes.c_uint32)),
                                  ctypes.POINTER(ctypes.POINTER(ctypes.c_float))]),
        "rally_data_fingerprint": (I, [P, ctypes.c_char_p, Z]),
        "rally_data_partition": (ctypes.c_char_p, [P]),
        # the data cursor (rally.data.Cursor computes the same in numpy)
        "rally_cursor_new": (I, [U64, U64, U64, PP]),
        "rally_cursor_free": (None, [P]),
        "rally_cursor_next": (I, [P, I, I, PU64, Z, PZ]),
        "rally_cursor_epoch": (U64, [P]),
        "rally_cursor_position": (U64, [P]),
        "rally_cursor_id": (U64, [P, U64, U64]),
        "rally_cursor_save": (I, [P, P, Z]),
        "rally_cursor_load": (I, [P, P, Z, ctypes.c_char_p, Z]),
        "rally_ids_digest": (U64, [PU64, Z]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    from . import xsum
    xsum.declare(lib)
