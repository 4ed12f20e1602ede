"""Compiles the per-record path's modules with Cython (seclake/native.py says which and why).

Everything else about the package is in pyproject.toml. Each extension is
optional: where there is no C compiler, or a module does not build, the
install goes on and that module runs from its ``.py`` file.
"""

import importlib.util
import os
from pathlib import Path

from setuptools import Extension, setup

_spec = importlib.util.spec_from_file_location("_seclake_native", Path(__file__).parent / "seclake" / "native.py")
native = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(native)


def extensions():
    if not native.wanted():  # SECLAKE_NATIVE=0: install the sources only
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:  # built without the build requirements (no isolation): plain Python
        return []
    modules = [
        # -g0: without setuptools' default debug symbols an object is ~6x
        # smaller (document: 1.34 -> 0.23 MB). -O2, not the default -O3: the
        # usual level for extensions; -O3 was not measured against it.
        Extension(name, [str(native.source_of(name).relative_to(Path(__file__).parent))],
                  optional=True, extra_compile_args=["-O2", "-g0"])
        for name in native.MODULES
    ]
    return cythonize(
        modules,
        # The sources are plain Python: their annotations document, they do
        # not declare C types (Cython would otherwise enforce them at run time).
        compiler_directives={"language_level": 3, "annotation_typing": False},
        nthreads=os.cpu_count() or 1,
        quiet=True,
        build_dir="build/cython",  # the generated C, out of the source tree
    )


setup(ext_modules=extensions(), options={"build_ext": {"parallel": os.cpu_count() or 1}})
