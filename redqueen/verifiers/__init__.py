"""redqueen.verifiers."""
