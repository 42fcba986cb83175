"""Developer tooling (benchmarks, catalog replay upstreams, corpus readers). Never imported by the
product and never copied into the Lambda layer."""
