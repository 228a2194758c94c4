"""judgelab's schema core: the one place a schema's knowledge lives.

A schema is a folder of this package (or of ``$JUDGELAB_CONFIGS_DIR``): ``config.xml`` (the Label
Studio labeling config), ``schema.yaml`` (data fields, scales, label sets, items, targets),
``samples.json`` and its prompts. The modules beside the folders read them, and every other layer
(``backend``, ``sync``, ``analysis``) takes schema knowledge from here and nowhere else:

- :mod:`.schema`: the folders into :class:`Schema` objects (``get_schema``, ``all_schemas``);
- :mod:`.label_config`: a label config's controls, objects and fingerprint;
- :mod:`.detect`: which schema a project's label config is;
- :mod:`.task_data`: a task's data checked and completed against its schema;
- :mod:`.items`: judgment items and their kinds (``verdict_{i}`` -> ``line_{i}``, ordinal or nominal);
- :mod:`.tables`: the tidy-table contract between ``sync`` and ``analysis``.
"""

from judgelab.configs.schema import Schema, SchemaError, all_schemas, configs_dir, get_schema, load_schema

__all__ = ["Schema", "SchemaError", "all_schemas", "configs_dir", "get_schema", "load_schema"]
