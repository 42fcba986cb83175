"""Upstream OAuth grants (tokens foldgate holds *for* upstream servers), encrypted at rest."""
