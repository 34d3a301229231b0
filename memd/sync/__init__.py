"""One memory on several machines, synchronised through a git remote.

- ``device.py``: device ids and their seq spaces (``.memd/devices.json``);
- ``diff3.py`` and ``merge.py``: the three-way merge of memd's own files;
- ``gitops.py``: fetch, push and reading trees through git's plumbing;
- ``apply.py``: writing a merge into the working tree, journaled;
- ``flow.py``: ``memd sync`` from start to end.

See ARCHITECTURE.md §7. This package's ``__init__`` imports nothing, so
``memd.state`` can ask ``device.py`` for a seq space without pulling in the
rest of sync.
"""
