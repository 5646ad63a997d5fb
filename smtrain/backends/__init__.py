"""Backends that turn a resolved plan into a training job: one module per backend.

Each backend imports its heavy dependencies lazily, so importing this package stays cheap.
"""
