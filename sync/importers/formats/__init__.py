"""The seed file formats, one module each."""
