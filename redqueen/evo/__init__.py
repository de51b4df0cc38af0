"""redqueen.evo."""
