"""The pygls language server: protocol in, engine call, protocol out (see the LSP issue)."""
