"""How many threads bulk embedding runs: one a core, at most four.

numpy's ``embed_many`` and OpenVINO's streams (``openvino_encoder``) both go by
it, so each thread of the one finds a stream of the other free."""

from __future__ import annotations

import os


def embedding_threads() -> int:
    return min(4, os.cpu_count() or 1)
