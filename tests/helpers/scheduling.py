"""How `make test` hands test files to its xdist workers: as --dist loadfile does (a file
runs on one worker, so its module fixtures are built once), except that the files of a
folder in SHARED_BUILDS go to one worker together: they share session builds that take
seconds, which each worker would otherwise build for itself."""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling

# tests/tokenization/: bbc-news tokenizers of four kinds (conftest.py there), ~20 s to train.
SHARED_BUILDS = ("tests/tokenization/",)


class SharedBuildScheduling(LoadFileScheduling):
    def _split_scope(self, nodeid: str) -> str:
        path = super()._split_scope(nodeid)
        return next((folder for folder in SHARED_BUILDS if path.startswith(folder)), path)
