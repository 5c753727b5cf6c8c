"""publishDiagnostics for JSON and Markdown documents, computed in a worker process of their own."""
