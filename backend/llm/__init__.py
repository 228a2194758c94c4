"""The LLM path: OpenAI-compatible client, response cache, prompts, answer parsing, span alignment."""
