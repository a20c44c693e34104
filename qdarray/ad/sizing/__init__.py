"""How big a reverse launch's adstacks are: symbolic bounds (`bounds`), the parallel max-reducer,
the counting pass at launch (`at_launch`), packed layouts and the checkpoint stride.
"""
