"""The engine: a real, small, deterministic training run on a simulated GPU cluster.

Pure computation: NumPy and the standard library only. Nothing here knows about the web.
"""
