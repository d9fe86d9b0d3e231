"""The types every stage passes: clusters and offers, placements, job specs and contexts, rendered
artifacts, handles and live statuses, the state document, addresses and the GPU table.

Modules here import nothing of jsctl's stages (config, plan, render, providers, apply, state, api,
cli); every stage imports them. tests/unit/test_layering.py keeps it so.
"""
