"""redqueen.engine."""
