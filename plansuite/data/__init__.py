"""Datasets: random-walk trajectories, verifier examples, instance folders."""
