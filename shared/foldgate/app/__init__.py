"""Application wiring: the factories that build every long-lived part from Settings, local serve,
the indexer Lambda body and the CLI. Nothing below this package imports it."""
