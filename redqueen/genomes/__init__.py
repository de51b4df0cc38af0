"""redqueen.genomes."""
