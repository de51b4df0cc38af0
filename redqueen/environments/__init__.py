"""redqueen.environments."""
