"""Builds modelmetrics._native with CMake (MODELMETRICS_PYTHON_ONLY: the format core, the
instruments and the pipeline catalog; no network libraries, tests or benchmarks) for the
interpreter running pip, and places it in the package. Metadata is in pyproject.toml."""

import os
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        target = os.path.abspath(self.get_ext_fullpath(ext.name))
        jobs = os.environ.get("MODELMETRICS_BUILD_JOBS", str(os.cpu_count() or 2))
        # MODELMETRICS_CMAKE_BUILD_DIR: a CMake tree of this repository that already builds the
        # extension for this interpreter (scripts/setup.sh passes its build/), so the module is
        # compiled once; otherwise a Release tree of its own with only the extension's code.
        build_dir = os.environ.get("MODELMETRICS_CMAKE_BUILD_DIR")
        if not build_dir:
            build_dir = os.path.join(os.path.abspath(self.build_temp), "cmake")
            os.makedirs(build_dir, exist_ok=True)
            subprocess.check_call([
                "cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                "-DMODELMETRICS_PYTHON_ONLY=ON", f"-DPython3_EXECUTABLE={sys.executable}",
            ])
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "mm_python_native",
                               "--parallel", jobs])
        built = os.path.join(build_dir, "python", "modelmetrics", os.path.basename(target))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        self.copy_file(built, target)


setup(
    ext_modules=[CMakeExtension("modelmetrics._native")],
    cmdclass={"build_ext": CMakeBuild},
    # Not ./build: that is the CMake tree of `scripts/setup.sh`.
    options={"build": {"build_base": os.path.join("build", "pip")},
             "egg_info": {"egg_base": os.path.join("build", "pip")}},
)
