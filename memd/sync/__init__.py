"""One memory on several machines, synchronised through a git remote (ARCHITECTURE.md §7).

- ``merge.py``: the three-way merge of memd's own documents, entry by entry,
  over ``sides.py`` (each side cut into entries and lines), ``diff3.py``,
  ``hunks.py`` (a region both sides changed), ``frontmatter.py`` and ``renames.py``
  (a topic renamed on one side, changed under its old name on the other);
  ``files.py``: state, registry, the rest;
- ``gitops.py``: fetch, push, trees, blobs and commits through git's plumbing;
- ``integrate.py``: a fast-forward or a merge commit, planned on objects;
- ``apply.py``: writing it into the working tree, journaled;
- ``flow.py``: ``memd sync`` from start to end (``report.py``: what it did);
- ``branches.py``: which of the remote's branches holds the vault (for
  ``memd init --from``, in ``memd.app.clone``, and for a sync that tracks none);
- ``status.py``: what ``memd status`` shows.

Device ids and their seq ranges (``.memd/devices.json``) live below, in
``memd/vault/spaces.py``, since seq allocation needs them; ``memd init
--from`` is ``memd/app/clone.py``.
"""
