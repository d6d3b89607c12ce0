"""A package for ``aliascheck check sweep_pkg``: three good nodes, two aliasing ones, one it cannot build."""
