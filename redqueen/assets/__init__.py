"""redqueen.assets."""
