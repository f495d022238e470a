"""Model servers: Ollama native and OpenAI-compatible, behind one streaming contract."""
