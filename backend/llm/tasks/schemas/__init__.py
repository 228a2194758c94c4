"""One module per schema, each registering its LLM task."""
