"""setup.py — the part of the build pyproject.toml cannot say: the wheel
bundles a copy of librally.so, librally_mock.so, rally-run and rally-tracker
(in rally/_bundled), so a pip-installed package works in any interpreter and
venv, whether or not `make install` ran, and always with the library its
Python code was written for.

Where the copies come from: LIBRALLY_BUILD_DIR, else the source tree's build/
(what `make build` made).  When that directory lacks them, they are built
there with CMake from the source tree this directory sits in (two levels up);
pip then needs no network, only the compilers and -dev packages `make deps`
installs.  The wheel is tagged py3-none-<platform>: ctypes needs no
particular interpreter, but the binaries need this platform."""

import os
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py
try:
    from setuptools.command.bdist_wheel import bdist_wheel  # setuptools >= 70.1
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:
        raise SystemExit("rally: building the wheel needs the 'wheel' package with this "
                         "setuptools, and this python3 has none: install it (Debian's "
                         "python3-wheel, or pip install wheel), or let pip fetch it by leaving "
                         "out --no-build-isolation and --no-index") from None

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
BUNDLED = {  # file in the build directory -> CMake target
    "librally.so": "rally_shared",
    "librally_mock.so": "rally_mock_shared",
    "rally-run": "rally-run",
    "rally-tracker": "rally-tracker",
}


def build_dir():
    d = os.environ.get("LIBRALLY_BUILD_DIR") or os.path.join(SOURCE, "build")
    d = os.path.abspath(d)
    missing = [t for f, t in BUNDLED.items() if not os.path.exists(os.path.join(d, f))]
    if missing:
        if not os.path.exists(os.path.join(SOURCE, "CMakeLists.txt")):
            raise SystemExit("rally: %s lacks %s and %s is not rally's source tree; set "
                             "LIBRALLY_BUILD_DIR to a build directory" % (d, ", ".join(missing), SOURCE))
        print("rally: building %s in %s" % (" ".join(missing), d), flush=True)
        subprocess.check_call(["cmake", "-S", SOURCE, "-B", d, "-DCMAKE_BUILD_TYPE=Release"])
        subprocess.check_call(["cmake", "--build", d, "-j", str(os.cpu_count() or 1),
                               "--target"] + missing)
    return d


class BuildPy(build_py):
    """Copies the library and the two programs into the package (realpath:
    the versioned file, under the unversioned name _lib.py loads)."""

    def run(self):
        super().run()
        src = build_dir()
        out = os.path.join(self.build_lib, "rally", "_bundled")
        os.makedirs(out, exist_ok=True)
        for f in BUNDLED:
            shutil.copyfile(os.path.realpath(os.path.join(src, f)), os.path.join(out, f))
            os.chmod(os.path.join(out, f), 0o755)


class Binary(Distribution):
    """Not pure: the files go to platlib and the wheel gets a platform tag."""

    def has_ext_modules(self):
        return True


class BdistWheel(bdist_wheel):
    def get_tag(self):
        return ("py3", "none", super().get_tag()[2])


setup(distclass=Binary, cmdclass={"build_py": BuildPy, "bdist_wheel": BdistWheel})
