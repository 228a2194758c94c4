"""Users' files into checked Label Studio tasks (see the modules of this package)."""
