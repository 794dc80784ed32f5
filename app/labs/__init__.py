"""Concept labs: the ring all-reduce lab, the GPU memory calculator, cost and energy, and the
classroom material (swap-it cards, discussion questions). Pure Python on top of the engine;
served by app/routes/labs.py and the `trainingrun memory` command."""
