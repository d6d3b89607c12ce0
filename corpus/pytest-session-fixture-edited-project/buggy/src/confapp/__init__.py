"""A configuration loader and the overrides a run applies."""
