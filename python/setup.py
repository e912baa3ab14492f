"""Installs the l3cache Python package with its shared library, built from
this checkout by CMake, so that ``import l3cache`` needs no environment
variable:

    pip install --no-build-isolation ./python

(no network: Debian's python3-setuptools and python3-wheel are enough). The
library is built with the checkout's CMakeLists.txt into setuptools' build
directory; ``L3CACHE_CMAKE_ARGS`` adds arguments to its configure step."""
import os
import re
import shlex
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(l3cache VERSION ([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("no project version in %s/CMakeLists.txt" % ROOT)
    return m.group(1)


class BuildWithLibrary(build_py):
    """build_py, then the shared library into the package as libl3cache.so."""

    def run(self):
        super().run()
        temp = os.path.abspath(self.get_finalized_command("build").build_temp)
        cmake_build = os.path.join(temp, "l3cache-cmake")
        configure = ["cmake", "-S", ROOT, "-B", cmake_build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"]
        configure += shlex.split(os.environ.get("L3CACHE_CMAKE_ARGS", ""))
        subprocess.check_call(configure)
        subprocess.check_call(["cmake", "--build", cmake_build, "--target", "l3cache",
                               "-j", str(os.cpu_count() or 1)])
        self.copy_file(os.path.join(cmake_build, "libl3cache.so"),
                       os.path.join(self.build_lib, "l3cache", "libl3cache.so"))


class BinaryDistribution(Distribution):
    """The wheel carries a native library: platform-specific."""

    def has_ext_modules(self):
        return True


setup(version=version(), cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
