"""The package's version: CMakeLists.txt's project version (a test checks)."""
__version__ = "0.1.0"
