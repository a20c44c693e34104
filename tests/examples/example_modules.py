"""The example programs as modules, in float32 as written or in a float64 copy."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str, precision: str = "float32") -> ModuleType:
    """examples/<name>.py as a module; "float64" is a copy whose `real` is qd.float64 (the
    kernels, arrays and literals then all compute in float64, as the originals with
    `real = ti.f64`). The copy lives at a fixed path so that the compile cache serves it on
    later runs."""
    module_name = f"{name}_{precision}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = EXAMPLES / f"{name}.py"
    if precision == "float64":
        source = path.read_text()
        line = "real = qd.float32 "
        assert source.count(line) == 1
        path = Path(tempfile.gettempdir()) / "qdarray_examples" / f"{module_name}.py"
        path.parent.mkdir(exist_ok=True)
        text = source.replace(line, "real = qd.float64 ")
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
