"""judgelab ML backend: schema-aware pre-annotation for Label Studio."""

__version__ = "0.1.0"
