"""redqueen.fitness."""
