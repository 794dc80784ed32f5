"""Training Run: a live, explorable model of how AI models are trained across many GPUs."""

__version__ = "0.1.0"
