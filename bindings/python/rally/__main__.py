"""``python3 -m rally --version``: the package's version and where its
library and launcher are; ``python3 -m rally`` alone says the same."""
import sys

from . import __version__, _lib


def main(argv):
    if argv not in ([], ["--version"]):
        print("usage: python3 -m rally [--version]", file=sys.stderr)
        return 2
    print("rally %s" % __version__)
    if argv:
        return 0
    _lib.load()
    print("library %s" % _lib.path())
    for t in ("rally-run", "rally-tracker"):
        try:
            print("%s %s" % (t, _lib.tool(t)))
        except Exception as e:  # noqa: BLE001 - say what is missing, go on
            print("%s: %s" % (t, e))
    return 0


sys.exit(main(sys.argv[1:]))
