"""Kiln for Python: compile ONNX models and run .kiln artifacts with numpy.

    import numpy as np
    import kiln

    artifact = kiln.compile("model.onnx", targets=["cpu"])   # or kiln.Artifact("model.kiln")
    session = kiln.Session(artifact, kiln.Device("cpu", threads=4))
    outputs = session.run({"image": np.zeros((1, 3, 224, 224), np.float32)})

Artifact, Device and Session wrap the runtime's C API (kiln/runtime.h);
inputs are passed without a copy when they are C-contiguous arrays of the
input's dtype, and the outputs are arrays the runtime writes into. Runtime
errors raise kiln.Error subclasses carrying the status code; kiln.compile runs
the kiln-compile driver and raises kiln.CompileError. See docs/python.md.
"""

from . import _kiln
from ._compile import compile, compile_flags, find_kiln_compile
from ._errors import (CompileError, DeadlineExceededError, Error, FileError, InternalError,
                      InvalidArgumentError, InvalidArtifactError, OutOfMemoryError, StatusCode,
                      UnavailableError, UnsupportedError)
from ._kiln import Artifact, Device, Dispatch, Program, Session, TensorInfo

__version__ = _kiln.version()
__revision__ = _kiln.revision()

__all__ = [
    "Artifact", "Device", "Session", "TensorInfo", "Program", "Dispatch", "compile",
    "compile_flags", "find_kiln_compile", "Error", "StatusCode", "InvalidArgumentError",
    "FileError", "InvalidArtifactError", "UnsupportedError", "OutOfMemoryError",
    "InternalError", "UnavailableError", "DeadlineExceededError", "CompileError",
]

# The classes report the package, not its submodules, as their home
# (tracebacks say kiln.FileError).
for _cls in (Artifact, Device, Session, TensorInfo, Program, Dispatch, Error, StatusCode,
             InvalidArgumentError, FileError, InvalidArtifactError, UnsupportedError,
             OutOfMemoryError, InternalError, UnavailableError, DeadlineExceededError,
             CompileError):
    _cls.__module__ = __name__
del _cls
