"""Storage: one package per store (catalog, results, approvals, tokens), each an interface in
``base`` plus one module per backend (``sqlite`` locally, ``dynamodb`` in the cloud). The factories
that pick a backend from the settings live in :mod:`foldgate.app.wiring`."""
