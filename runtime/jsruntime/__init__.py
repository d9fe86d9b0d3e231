"""jsruntime: the in-job package jsctl injects into every job."""
