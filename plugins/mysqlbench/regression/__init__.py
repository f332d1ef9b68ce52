"""Regression analysis over the results store: each metric's history per series, change points
found by Apache Otava's E-Divisive, and the regression report with its notification."""
