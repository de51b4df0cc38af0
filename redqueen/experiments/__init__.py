"""redqueen.experiments."""
