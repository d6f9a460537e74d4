"""Partition logs on disk: segments, indexes, checkpoints, retention and crash recovery.
Plain Python over files; knows nothing of sockets or the reactor."""
